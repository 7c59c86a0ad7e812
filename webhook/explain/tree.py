"""The tree from an owner (a Job, a configured target object) down to its Workload,
CompositePodGroups and PodGroups, built from listed objects: a pure function of
dicts, so it is tested without a server (tests/unit/test_explain.py).

Links, as the 1.37 APIs make them:
- Workload -> owner: `spec.controllerRef` (apiGroup, kind, name), else its
  controller ownerReference;
- PodGroup / CompositePodGroup -> Workload: `spec.workloadRef.workloadName`;
  -> parent CompositePodGroup: `spec.parentCompositePodGroupName`;
- Pod -> PodGroup: `spec.schedulingGroup.podGroupName` (same namespace);
- ResourceClaim -> PodGroup: `podgroup.status.resourceClaimStatuses` (generated),
  or the entry's `resourceClaimName`.

Whatever is asked about (a PodGroup, say), the tree starts at the top-most object
found above it, and the asked node carries `"asked": true`."""
from __future__ import annotations

from typing import Any

from webhook.explain import foreign, groups, provenance
from webhook.explain.groups import _spec
from webhook.kinds import metadata

DEFAULT_GROUP_LABEL = "scheduling.k8s.io/pod-group"
KINDS = {"job": "Job", "jobs": "Job", "workload": "Workload", "workloads": "Workload", "podgroup": "PodGroup",
         "podgroups": "PodGroup", "pg": "PodGroup", "compositepodgroup": "CompositePodGroup",
         "compositepodgroups": "CompositePodGroup", "cpg": "CompositePodGroup", **foreign.TREE_KINDS}


class NotFound(LookupError):
    """The object asked about is not among the objects read."""


def _key(obj: dict) -> tuple[str, str]:
    return str(obj.get("kind") or ""), str(metadata(obj).get("name") or "")


def _group_of(api_version: Any) -> str:
    text = str(api_version or "")
    return text.split("/")[0] if "/" in text else ""


class _Index:
    def __init__(self, objects: dict[str, list[dict]], namespace: str):
        def mine(items):
            return [o for o in items or [] if isinstance(o, dict) and isinstance(metadata(o), dict)
                    and (metadata(o).get("namespace") or namespace) == namespace]
        self.namespace = namespace
        self.owners = mine(objects.get("owners"))
        self.workloads = mine(objects.get("workloads"))
        self.podgroups = mine(objects.get("podgroups"))
        self.composites = mine(objects.get("composites"))
        self.pods = mine(objects.get("pods"))
        self.events = mine(objects.get("events"))
        self.claims = {metadata(c).get("name"): c for c in mine(objects.get("claims"))}
        self.by_uid = {metadata(o).get("uid"): o for o in self.owners + self.workloads + self.podgroups + self.composites
                       if metadata(o).get("uid")}

    def find(self, kind: str, name: str) -> dict | None:
        pools = {"Workload": self.workloads, "PodGroup": self.podgroups, "CompositePodGroup": self.composites}
        if kind in pools:
            return next((o for o in pools[kind] if metadata(o).get("name") == name), None)
        return next((o for o in self.owners if metadata(o).get("name") == name
                     and str(o.get("kind") or "").lower() == kind.lower()), None)

    def owner_of(self, obj: dict) -> dict | None:
        if obj.get("kind") == "Workload":
            ref = _spec(obj).get("controllerRef")
            if isinstance(ref, dict) and ref.get("name"):
                for o in self.owners:
                    if metadata(o).get("name") == ref["name"] and o.get("kind") == ref.get("kind") \
                            and _group_of(o.get("apiVersion")) == (ref.get("apiGroup") or ""):
                        return o
        owner = provenance.controller_owner(obj)
        return self.by_uid.get(owner.get("uid")) if owner else None

    def parent_of(self, obj: dict) -> dict | None:
        spec = _spec(obj)
        if spec.get("parentCompositePodGroupName"):
            found = self.find("CompositePodGroup", spec["parentCompositePodGroupName"])
            if found:
                return found
        workload = (spec.get("workloadRef") or {}).get("workloadName") if isinstance(spec.get("workloadRef"), dict) \
            else None
        if obj.get("kind") in ("PodGroup", "CompositePodGroup") and workload:
            found = self.find("Workload", workload)
            if found:
                return found
        return self.owner_of(obj)

    def template_of(self, pod: dict) -> dict | None:
        """The pod template of the Pod's controller, when it is an owner read here (a Job)."""
        owner = provenance.controller_owner(pod)
        found = self.by_uid.get(owner.get("uid")) if owner else None
        template = (_spec(found).get("template") or {}) if found else None
        return template.get("spec") if isinstance(template, dict) and isinstance(template.get("spec"), dict) else None


def _base(obj: dict, asked: tuple[str, str]) -> dict:
    meta = metadata(obj)
    node = {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"), "name": meta.get("name"),
            "namespace": meta.get("namespace"), "setBy": provenance.set_by(obj), "children": []}
    if _key(obj) == asked:
        node["asked"] = True
    return node


def _owned_by(obj: dict, owner: dict) -> bool:
    ref = provenance.controller_owner(obj)
    return bool(ref) and ref.get("uid") == metadata(owner).get("uid") and bool(ref.get("uid"))


def _workload_of(obj: dict) -> str | None:
    ref = _spec(obj).get("workloadRef")
    return ref.get("workloadName") if isinstance(ref, dict) else None


def _owner_node(ix: _Index, obj: dict, asked, label: str) -> dict:
    node = _base(obj, asked)
    spec, status = _spec(obj), (obj.get("status") or {}) if isinstance(obj.get("status"), dict) else {}
    if obj.get("kind") == "Job":
        node.update({"parallelism": spec.get("parallelism"), "completions": spec.get("completions"),
                     "scheduling": spec.get("scheduling"),
                     "status": {k: status.get(k, 0) for k in ("active", "ready", "succeeded", "failed")},
                     "templateClaims": [c.get("name") for c in ((spec.get("template") or {}).get("spec") or {})
                                        .get("resourceClaims") or [] if isinstance(c, dict)]})
    node.update(foreign.node_fields(obj, ix.pods, ix.podgroups))          # a Coscheduling or Volcano PodGroup
    name, kind, group = metadata(obj).get("name"), obj.get("kind"), _group_of(obj.get("apiVersion"))
    for wl in ix.workloads:
        ref = _spec(wl).get("controllerRef") if isinstance(_spec(wl).get("controllerRef"), dict) else {}
        if (ref.get("name") == name and ref.get("kind") == kind and (ref.get("apiGroup") or "") == group) \
                or _owned_by(wl, obj):
            node["children"].append(_workload_node(ix, wl, asked, label))
    for pg in ix.composites + ix.podgroups:       # groups it owns without a Workload
        if _owned_by(pg, obj) and not _workload_of(pg) and not _spec(pg).get("parentCompositePodGroupName"):
            node["children"].append(_group_node(ix, pg, asked, label))
    return node


def _templates(spec: dict, out: list[dict], depth: int = 0) -> list[dict]:
    for t in spec.get("podGroupTemplates") or []:
        if isinstance(t, dict):
            kind, count = groups.policy(t)
            out.append({"name": t.get("name"), "kind": "PodGroupTemplate", "policy": kind, "minCount": count,
                        "claims": [c.get("name") for c in t.get("resourceClaims") or [] if isinstance(c, dict)],
                        "depth": depth})
    for t in spec.get("compositePodGroupTemplates") or []:
        if isinstance(t, dict):
            kind, count = groups.policy(t)
            out.append({"name": t.get("name"), "kind": "CompositePodGroupTemplate", "policy": kind,
                        "minGroupCount": count, "depth": depth})
            _templates(t, out, depth + 1)
    return out


def _workload_node(ix: _Index, wl: dict, asked, label: str) -> dict:
    node = _base(wl, asked)
    name = metadata(wl).get("name")
    node["controllerRef"] = _spec(wl).get("controllerRef")
    made = {(_spec(g).get("workloadRef") or {}).get("templateName") for g in ix.podgroups + ix.composites
            if _workload_of(g) == name}
    node["templates"] = [{**t, "materialized": t["name"] in made} for t in _templates(_spec(wl), [])]
    for g in ix.composites + ix.podgroups:
        if _workload_of(g) == name and not _spec(g).get("parentCompositePodGroupName"):
            node["children"].append(_group_node(ix, g, asked, label))
    return node


def _group_node(ix: _Index, obj: dict, asked, label: str, depth: int = 0) -> dict:
    if obj.get("kind") != "CompositePodGroup":
        node = groups.podgroup_node(obj, ix.pods, ix.claims, ix.events, label, ix.template_of)
        if _key(obj) == asked:
            node["asked"] = True
        return node
    node = _base(obj, asked)
    spec, name = _spec(obj), metadata(obj).get("name")
    node["policy"], node["minGroupCount"] = groups.policy(spec)
    node["disruptionMode"] = groups.disruption(spec)
    node["template"] = (spec.get("workloadRef") or {}).get("templateName") if isinstance(spec.get("workloadRef"),
                                                                                          dict) else None
    node["scheduling"] = {"condition": groups.condition(obj)}
    if depth < 8:                       # a cycle of parents cannot recurse forever
        for g in ix.composites + ix.podgroups:
            if _spec(g).get("parentCompositePodGroupName") == name and g is not obj:
                node["children"].append(_group_node(ix, g, asked, label, depth + 1))
    scheduled = sum(1 for c in node["children"] if (((c.get("scheduling") or {}).get("condition") or {})
                                                    .get("status") == "True"))
    node["childGroups"] = {"total": len(node["children"]), "scheduled": scheduled}
    return node


def _walk(node: dict):
    yield node
    for child in node.get("children") or []:
        yield from _walk(child)


def summarize(root: dict) -> dict:
    pgs = [n for n in _walk(root) if n.get("kind") == "PodGroup"]
    claims = [c for n in pgs for c in n["claims"]]
    own = [c for n in pgs for c in n["podClaims"]]
    return {"podGroups": len(pgs), "joined": sum(n["members"]["joined"] for n in pgs),
            "bound": sum(n["members"]["bound"] for n in pgs), "pending": sum(n["members"]["pending"] for n in pgs),
            "groupClaims": len(claims), "groupClaimsAllocated": sum(1 for c in claims if c["allocated"]),
            "podClaims": len(own), "podClaimsAllocated": sum(1 for c in own if c["allocated"])}


def build(objects: dict[str, list[dict]], kind: str, name: str, namespace: str,
          group_label: str = DEFAULT_GROUP_LABEL) -> dict:
    """{"asked", "root" (the tree), "summary", "notes"} for the object `kind`/`name`.
    `objects`: lists under owners (Jobs, target objects), workloads, podgroups,
    composites, pods, claims, events, and optionally webhooks (mutating configurations).
    Raises NotFound when the asked object is not among them."""
    ix = _Index(objects, namespace)
    kind = KINDS.get(kind.lower(), kind)
    obj = ix.find(kind, name)
    if obj is None:
        raise NotFound(f"{kind} {namespace}/{name} not found")
    asked = _key(obj)
    seen, top = {id(obj)}, obj
    while (up := ix.parent_of(top)) is not None and id(up) not in seen:
        seen.add(id(up))
        top = up
    if top.get("kind") == "Workload":
        root = _workload_node(ix, top, asked, group_label)
    elif top.get("kind") in ("PodGroup", "CompositePodGroup"):
        root = _group_node(ix, top, asked, group_label)
    else:
        root = _owner_node(ix, top, asked, group_label)
    notes = []
    if top.get("kind") == "Workload" and _spec(top).get("controllerRef"):
        ref = _spec(top)["controllerRef"]
        notes.append(f"owner {ref.get('kind')} {ref.get('name')} (controllerRef) was not read")
    mutating = [w.get("name") for cfg in objects.get("webhooks") or [] if isinstance(cfg, dict)
                for w in cfg.get("webhooks") or [] if isinstance(w, dict)
                and any("pods" in (r.get("resources") or []) for r in w.get("rules") or [] if isinstance(r, dict))]
    return {"asked": {"kind": asked[0], "name": asked[1], "namespace": namespace}, "root": root,
            "summary": summarize(root), "mutatingPodWebhooks": mutating, "notes": notes}
