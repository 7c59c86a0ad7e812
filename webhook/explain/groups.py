"""One PodGroup as a user asks about it: its members (joined, bound, pending), the
scheduler's last word (the PodGroupInitiallyScheduled condition, else the members'
latest event), and its claims: the claim generated for the group, allocated or not,
reserved for whom, which members reference it exactly, which would get a claim of
their own instead, and which have no entry for it. Pure functions of dicts.

The matching is the ResourceClaim controller's and the scheduler's
(k8s.io/dynamic-resource-allocation/resourceclaim.BindTo, v1.37): a Pod's entry is
served by the group's claim only when name, resourceClaimName and
resourceClaimTemplateName are all equal."""
from __future__ import annotations

from typing import Any, Callable

from webhook.explain import provenance
from webhook.gangs import state as gang_state
from webhook.gangs.store import group_of, member_of
from webhook.kinds import metadata

SCHEDULED = "PodGroupInitiallyScheduled"
REFS = ("resourceClaimName", "resourceClaimTemplateName")
FINISHED = ("Succeeded", "Failed")


def _spec(obj: dict) -> dict:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    return spec if isinstance(spec, dict) else {}


def _status(obj: dict) -> dict:
    status = obj.get("status") if isinstance(obj, dict) else None
    return status if isinstance(status, dict) else {}


def ref(entry: dict) -> dict:
    """The reference part of a claim entry: {"resourceClaimTemplateName": "gpu"}."""
    return {k: entry[k] for k in REFS if isinstance(entry, dict) and entry.get(k)}


def policy(spec: dict) -> tuple[str, int | None]:
    """("gang", minCount) | ("basic", None) | ("unset", None)."""
    p = spec.get("schedulingPolicy") or {}
    if isinstance(p, dict) and isinstance(p.get("gang"), dict):
        return "gang", p["gang"].get("minCount") if p["gang"].get("minCount") is not None \
            else p["gang"].get("minGroupCount")
    if isinstance(p, dict) and "basic" in p:
        return "basic", None
    return "unset", None


def disruption(spec: dict) -> str | None:
    mode = spec.get("disruptionMode")
    return next(iter(mode), None) if isinstance(mode, dict) and mode else None


def group_name_of(pod: dict) -> str | None:
    group = _spec(pod).get("schedulingGroup")
    return group.get("podGroupName") if isinstance(group, dict) else None


def pod_state(pod: dict) -> str:
    if _status(pod).get("phase") in FINISHED:
        return "finished"
    return "bound" if _spec(pod).get("nodeName") else "pending"


def condition(obj: dict, kind: str = SCHEDULED) -> dict | None:
    for c in _status(obj).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind:
            return {k: c.get(k) for k in ("type", "status", "reason", "message", "lastTransitionTime")}
    return None


def _event_time(e: dict) -> str:
    series = e.get("series") if isinstance(e.get("series"), dict) else {}
    when = series.get("lastObservedTime") or e.get("lastTimestamp") or e.get("eventTime") \
        or metadata(e).get("creationTimestamp") or ""
    return str(when)[:19]           # seconds: the formats differ only in the fraction


def last_event(events: list[dict], kind: str, names: set[str]) -> dict | None:
    """The newest event about one of `names` (of `kind`)."""
    mine = [e for e in events if isinstance(e, dict) and (e.get("involvedObject") or {}).get("kind") == kind
            and (e.get("involvedObject") or {}).get("name") in names]
    if not mine:
        return None
    e = max(mine, key=lambda e: (_event_time(e), str(metadata(e).get("resourceVersion") or "")))
    series = e.get("series") if isinstance(e.get("series"), dict) else {}
    return {"object": f"{kind.lower()}/{(e.get('involvedObject') or {}).get('name')}", "type": e.get("type"),
            "reason": e.get("reason"), "message": e.get("message") or e.get("note"), "time": _event_time(e),
            "count": e.get("count") or series.get("count")}


def _claim_name_for_pod(pod: dict, entry: dict) -> str | None:
    if entry.get("resourceClaimName"):
        return entry["resourceClaimName"]
    for s in _status(pod).get("resourceClaimStatuses") or []:
        if isinstance(s, dict) and s.get("name") == entry.get("name"):
            return s.get("resourceClaimName")
    return None


def claim_state(claim: dict | None) -> dict:
    """allocated, devices (driver/pool/device), nodes, reservedFor (resource/name)."""
    if not isinstance(claim, dict):
        return {"exists": False, "allocated": False, "devices": [], "nodes": [], "reservedFor": []}
    status = _status(claim)
    allocation = status.get("allocation") if isinstance(status.get("allocation"), dict) else None
    devices, nodes = [], []
    if allocation:
        for r in ((allocation.get("devices") or {}).get("results") or []):
            if isinstance(r, dict):
                devices.append(f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}")
        for term in ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []):
            for f in (term or {}).get("matchFields") or []:
                if isinstance(f, dict) and f.get("key") == "metadata.name":
                    nodes += [v for v in f.get("values") or [] if v not in nodes]
    reserved = [f"{r.get('resource')}/{r.get('name')}" for r in status.get("reservedFor") or [] if isinstance(r, dict)]
    return {"exists": True, "allocated": allocation is not None, "devices": devices, "nodes": nodes,
            "reservedFor": reserved}


def _entries(pod: dict) -> list[dict]:
    return [c for c in _spec(pod).get("resourceClaims") or [] if isinstance(c, dict) and c.get("name")]


def group_claims(pg: dict, members: list[dict], claims: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    """(the group's claims, the members' claims of their own). `claims`: ResourceClaims by name."""
    out = []
    statuses = {s.get("name"): s.get("resourceClaimName") for s in _status(pg).get("resourceClaimStatuses") or []
                if isinstance(s, dict)}
    group_entries = [c for c in _spec(pg).get("resourceClaims") or [] if isinstance(c, dict) and c.get("name")]
    exact = {(c["name"], tuple(sorted(ref(c).items()))) for c in group_entries}
    pending = any(pod_state(p) == "pending" for p in members)
    for gc in group_entries:
        name = gc.get("resourceClaimName") or statuses.get(gc["name"])
        obj = claims.get(name) if name else None
        shared, differs, missing = [], [], []
        for pod in members:
            pod_name = metadata(pod).get("name")
            entries = _entries(pod)
            if any(e["name"] == gc["name"] and ref(e) == ref(gc) for e in entries):
                shared.append(pod_name)
            elif any(e["name"] == gc["name"] or (ref(e) and ref(e) == ref(gc)) for e in entries):
                differs.append(pod_name)
            else:
                missing.append(pod_name)
        state = claim_state(obj)
        item = {"name": gc["name"], **ref(gc), "claim": name, **state,
                "generatedBy": provenance.created_by(obj) if obj else None,
                "sharedBy": shared, "perPodInstead": differs, "noEntry": missing}
        item["note"] = _claim_note(item, gc, pending)
        out.append(item)
    own = []
    for pod in members:
        for e in _entries(pod):
            if (e["name"], tuple(sorted(ref(e).items()))) in exact:
                continue
            name = _claim_name_for_pod(pod, e)
            state = claim_state(claims.get(name) if name else None)
            own.append({"pod": metadata(pod).get("name"), "name": e["name"], **ref(e), "claim": name,
                        "allocated": state["allocated"], "devices": state["devices"],
                        "reservedFor": state["reservedFor"]})
    return out, own


def _claim_note(item: dict, gc: dict, pending: bool) -> str | None:
    if item["claim"] is None:
        return "not generated yet (the resourceclaim-controller generates it once the PodGroup exists)"
    if not item["exists"]:
        return f"ResourceClaim {item['claim']} does not exist"
    if item["allocated"]:
        return None
    if not item["sharedBy"]:
        why = "members with a differing entry get a claim of their own" if item["perPodInstead"] else \
            "no member has an entry for it"
        return f"no member references it exactly: it stays unallocated, silently ({why})"
    return "allocated when the scheduler places the group" if pending else "not allocated"


def verdict(node: dict) -> str:
    m, (kind, min_count) = node["members"], (node["policy"], node["minCount"])
    if m["joined"] == 0:
        return "waiting for members: none joined"
    if kind == "gang" and isinstance(min_count, int) and m["joined"] < min_count:
        return f"waiting for members: {m['joined']} of minCount {min_count} joined"
    if m["pending"]:
        return f"waiting for the scheduler: {m['pending']} of {m['joined']} pending"
    return f"running: {m['bound']} bound" + (f", {m['finished']} finished" if m["finished"] else "")


def gang(pg: dict, members: list[dict]) -> dict | None:
    """The live gang model's state of the group (webhook/gangs/state.py), computed by the same
    function from the same projections of what explain read; None without a gang policy."""
    group = group_of(pg)
    if group is None:
        return None
    status = gang_state.state(group, [m[1] for m in map(member_of, members) if m is not None])
    return {"state": status.state, "line": status.line(), "reason": status.reason or None}


def reason(cond: dict | None, event: dict | None, pending: int) -> str | None:
    """The scheduler's last word on the group, in one line."""
    if cond and cond.get("status") == "False":
        return f"{cond.get('reason')}: {cond.get('message')}" if cond.get("message") else cond.get("reason")
    if pending and event and event.get("type") == "Warning":
        return f"{event.get('reason')}: {event.get('message')}"
    if cond and cond.get("status") == "True":
        return cond.get("reason") or "Scheduled"
    return None


def podgroup_node(pg: dict, pods: list[dict], claims: dict[str, dict], events: list[dict], group_label: str,
                  template_of: Callable[[dict], dict | None]) -> dict[str, Any]:
    """The tree node of one PodGroup (children: none)."""
    meta, spec = metadata(pg), _spec(pg)
    name, namespace = meta.get("name"), meta.get("namespace")
    members = sorted((p for p in pods if group_name_of(p) == name and metadata(p).get("namespace") == namespace),
                     key=lambda p: metadata(p).get("name") or "")
    unjoined = sorted(metadata(p).get("name") for p in pods if metadata(p).get("namespace") == namespace
                      and group_name_of(p) is None and (metadata(p).get("labels") or {}).get(group_label) == name)
    states = [pod_state(p) for p in members]
    kind, min_count = policy(spec)
    cond = condition(pg)
    event = last_event(events, "Pod", {metadata(p).get("name") for p in members if pod_state(p) == "pending"}) or \
        last_event(events, "Pod", {metadata(p).get("name") for p in members})
    group, own = group_claims(pg, members, claims)
    added: dict[str, list[str]] = {}
    for p in members:
        for path in provenance.admission_additions(p, template_of(p)):
            added.setdefault(path, []).append(metadata(p).get("name"))
    node = {
        "kind": "PodGroup", "apiVersion": pg.get("apiVersion"), "name": name, "namespace": namespace,
        "policy": kind, "minCount": min_count, "disruptionMode": disruption(spec),
        "template": (spec.get("workloadRef") or {}).get("templateName"),
        "parent": spec.get("parentCompositePodGroupName"),
        "deleting": bool(meta.get("deletionTimestamp")),
        "members": {"joined": len(members), "bound": states.count("bound"), "pending": states.count("pending"),
                    "finished": states.count("finished"),
                    "pods": [{"name": metadata(p).get("name"), "state": s, "node": _spec(p).get("nodeName"),
                              "createdBy": provenance.created_by(p)} for p, s in zip(members, states)],
                    "labelledNotJoined": unjoined},
        "scheduling": {"condition": cond, "lastEvent": event,
                       "reason": reason(cond, event, states.count("pending"))},
        "gang": gang(pg, members),
        "claims": group, "podClaims": own,
        "addedAtAdmission": [{"field": f, "pods": sorted(ps)} for f, ps in sorted(added.items())],
        "setBy": provenance.set_by(pg), "children": [],
    }
    node["state"] = verdict(node)
    return node
