"""`explain` for jobs written for Coscheduling or Volcano (docs/bridge.md): the foreign
PodGroup as the owner of its in-tree mirror, with what the bridge made of it (the
mirror, the phase it writes back, what it could not mirror) and the Pods its key
names, joined or not. Pure functions of dicts, but for the kinds `read` asks for.

A foreign PodGroup and its mirror have the same kind and name, so a foreign object
is told apart by its qualified kind, `PodGroup.scheduling.x-k8s.io`, as kubectl names
the resource (podgroups.scheduling.x-k8s.io)."""
from __future__ import annotations

from typing import Any

from webhook.foreign.dialects import ALL, Dialect
from webhook.foreign.mirror import CURRENT, OTHER, min_count, not_mirrored, ours
from webhook.kinds import metadata

#: What the reader may be asked for (webhook/explain/reader.py reads them): qualified kind, resource name.
NAMES = {name: d for d in ALL for name in (f"{d.kind}.{d.group}", d.resource)}
#: What tree.build accepts as the asked kind (lower case) -> the qualified kind.
TREE_KINDS = {alias: f"{d.kind}.{d.group}" for d in ALL
              for alias in (f"{d.kind}.{d.group}".lower(), d.resource, f"{d.plural[:-1]}.{d.group}")}


def dialect_of(obj: Any) -> Dialect | None:
    api_version = str((obj or {}).get("apiVersion") or "") if isinstance(obj, dict) else ""
    kind = str(obj.get("kind") or "") if isinstance(obj, dict) else ""
    return next((d for d in ALL if api_version == d.api_version and kind in (d.kind, f"{d.kind}.{d.group}")), None)


def qualify(obj: dict) -> dict:
    """A foreign object's kind as explain shows it (in place; other objects untouched)."""
    d = dialect_of(obj)
    if d is not None:
        obj["kind"] = f"{d.kind}.{d.group}"
    return obj


def node_fields(obj: dict, pods: list[dict], podgroups: list[dict]) -> dict:
    """What an owner node of a foreign PodGroup shows (`{}` for any other owner)."""
    d = dialect_of(obj)
    if d is None:
        return {}
    meta, status = metadata(obj), obj.get("status") if isinstance(obj.get("status"), dict) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    same = next((pg for pg in podgroups if metadata(pg).get("name") == name
                 and (metadata(pg).get("namespace") or namespace) == namespace), None)
    relation = "none" if same is None else ours(same, d, obj)
    named = [p for p in pods if (metadata(p).get("namespace") or namespace) == namespace
             and ((metadata(p).get(d.pod_key_in) or {}).get(d.pod_key) == name)]
    joined = [p for p in named if ((p.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") == name]
    not_joined = sorted(metadata(p).get("name") for p in named if p not in joined)
    handed = [p for p in joined if (p.get("spec") or {}).get("schedulerName") == "default-scheduler"]
    return {"bridge": {
        "dialect": d.name, "title": d.title, "minMember": (obj.get("spec") or {}).get("minMember"),
        "minCount": min_count(obj), "phase": status.get("phase"),
        "counts": {k: status.get(k, 0) for k in ("running", "succeeded", "failed")},
        "mirror": relation, "notMirrored": [{"field": p, "instead": i} for p, _, i in not_mirrored(d, obj)],
        "namedBy": d.key_path(), "named": len(named), "joined": len(joined), "notJoined": not_joined,
        "otherScheduler": sorted(metadata(p).get("name") for p in named
                                 if (p.get("spec") or {}).get("schedulerName") not in (None, "default-scheduler")),
        "handedOff": len(handed)}}


MIRROR = {CURRENT: "the in-tree PodGroup {name} (gang minCount {count}), made by the bridge and owned by this object",
          "stale": "the in-tree PodGroup {name} was made for an earlier object of this name; the bridge replaces it",
          OTHER: "an in-tree PodGroup {name} exists that the bridge did not make: the Pods join it, no status comes "
                 "back",
          "none": "none: bridge.{dialect} is off in the serving config, or the bridge has not run (docs/bridge.md)"}


def title_parts(node: dict) -> list[str]:
    b = node.get("bridge") or {}
    return [b["title"], f"minMember {b.get('minMember', 'unset')}"] if b else []


def lines(node: dict) -> list[tuple[str, str]]:
    """(colour, text) lines for the text output: "" plain, "ok", "bad", "advice"."""
    b = node.get("bridge")
    if not b:
        return []
    counts = b["counts"]
    out = [("" if b.get("phase") else "bad", f"phase: {b.get('phase') or 'none yet'} ({counts['running']} running, "
                                              f"{counts['succeeded']} succeeded, {counts['failed']} failed)"),
           ("ok" if b["mirror"] == CURRENT else "bad",
            "mirror: " + MIRROR[b["mirror"]].format(name=node.get("name"), count=b["minCount"], dialect=b["dialect"]))]
    out.append(("", f"members named by {b['namedBy']}: {b['named']}, joined {b['joined']}"))
    if b["notJoined"]:
        out.append(("advice", f"  not joined (created before the bridge was on, or with the webhook down): "
                              f"{', '.join(b['notJoined'][:6])}"))
    if b["otherScheduler"]:
        out.append(("advice", f"  naming another scheduler (bridge.schedulerNames hands them over): "
                              f"{', '.join(b['otherScheduler'][:6])}"))
    for item in b["notMirrored"]:
        out.append(("advice", f"not mirrored: {item['field']}: {item['instead']}"))
    return out
