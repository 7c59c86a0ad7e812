"""A foreign PodGroup's in-tree mirror (BRG-5), and what the reconciler does about
one group: pure functions of the objects, so every case is a unit test.

The mirror is a scheduling.k8s.io PodGroup of the same namespace and name (the Pods
name their group by name), gang `minCount` = `minMember` (at least 1: the in-tree
gang's minimum; a basic policy could never become a gang later), the fields both APIs
have copied (Volcano's priorityClassName), labelled with the dialect and owned by the
foreign object (a controller reference, so the garbage collector deletes it with its
owner; no blockOwnerDeletion, which would need the right to update the owner's
finalizers). An in-tree PodGroup without that label and owner is never touched."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webhook.foreign import status
from webhook.foreign.dialects import BRIDGE_LABEL, Dialect, get, min_member
from webhook.kinds import metadata

INT32_MAX = 2**31 - 1
#: ours(): what an in-tree PodGroup of the foreign group's name is to the bridge.
CURRENT, STALE, OTHER = "current", "stale", "other"


def min_count(foreign: dict) -> int:
    """The mirror's gang minCount: minMember, at least 1, at most int32."""
    value = min_member(foreign)
    return min(max(value or 1, 1), INT32_MAX)


def owner_reference(d: Dialect, foreign: dict) -> dict:
    meta = metadata(foreign)
    return {"apiVersion": d.api_version, "kind": d.kind, "name": meta.get("name"), "uid": meta.get("uid"),
            "controller": True}


def copied(d: Dialect, foreign: dict) -> dict[tuple[str, ...], Any]:
    """The mirror's fields copied from the foreign object (mirror path -> value), set ones only."""
    out = {}
    for src, dst in d.mapped:
        value = get(foreign, src)
        if value not in (None, "", {}, []):
            out[dst] = value
    return out


def mirror_for(d: Dialect, foreign: dict, api_version: str = "scheduling.k8s.io/v1beta1") -> dict:
    """The in-tree PodGroup to create for `foreign`."""
    meta = metadata(foreign)
    spec: dict = {"schedulingPolicy": {"gang": {"minCount": min_count(foreign)}}}
    for path, value in copied(d, foreign).items():
        node = {"spec": spec}
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return {"apiVersion": api_version, "kind": "PodGroup",
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"),
                         "labels": {BRIDGE_LABEL: d.name}, "ownerReferences": [owner_reference(d, foreign)]},
            "spec": spec}


def ours(mirror: dict, d: Dialect, foreign: dict | None) -> str:
    """CURRENT: made by the bridge for this very object; STALE: made for an earlier object of
    that name (deleted and created again); OTHER: not the bridge's to touch."""
    meta = metadata(mirror)
    if (meta.get("labels") or {}).get(BRIDGE_LABEL) != d.name:
        return OTHER
    name = metadata(foreign).get("name") if foreign else meta.get("name")
    refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict) and r.get("controller")
            and str(r.get("apiVersion", "")).split("/")[0] == d.group and r.get("kind") == d.kind
            and r.get("name") == name]
    if not refs:
        return OTHER
    return CURRENT if foreign is not None and refs[0].get("uid") == metadata(foreign).get("uid") else STALE


def not_mirrored(d: Dialect, foreign: dict) -> list[tuple[str, Any, str]]:
    """(path, value, what happens instead) for each set field with no in-tree equivalent (BRG-1)."""
    out = []
    for u in d.unmapped:
        value = get(foreign, u.path)
        if value in (None, {}, []) or value in u.ignore:
            continue
        out.append((".".join(u.path), value, u.instead))
    return out


@dataclass(frozen=True)
class Action:
    """One thing to do about a group. `verb`: create | minCount | delete | status | event."""
    verb: str
    body: Any = None
    reason: str = ""                     # events: the reason; delete: the stale mirror's uid
    warning: bool = False


@dataclass(frozen=True)
class Group:
    """What the reconciler knows of one foreign group."""
    dialect: Dialect
    foreign: dict | None
    mirror: dict | None                  # the in-tree PodGroup of that name, if the bridge knows one
    members: tuple[dict, ...] = field(default_factory=tuple)


def plan(group: Group, desired_status: dict | None) -> list[Action]:
    """What makes the cluster agree with the foreign object: the mirror created, its
    minCount followed, a stale mirror deleted, the foreign status written back."""
    d, foreign, mirror = group.dialect, group.foreign, group.mirror
    if foreign is None or metadata(foreign).get("deletionTimestamp"):
        return []                      # the garbage collector deletes the mirror with its owner
    where = f"{metadata(foreign).get('namespace')}/{metadata(foreign).get('name')}"
    if mirror is None:
        body = mirror_for(d, foreign)
        out = [Action("create", body),
               Action("event", f"mirrored as the in-tree PodGroup {where} (gang minCount {min_count(foreign)})",
                      "Mirrored")]
        missing = not_mirrored(d, foreign)
        if missing:
            out.append(Action("event", "not mirrored (no in-tree equivalent; docs/bridge.md): "
                              + "; ".join(f"{p}: {i}" for p, _, i in missing), "NotMirrored", warning=True))
        return out
    relation = ours(mirror, d, foreign)
    if relation == OTHER:
        return [Action("event", f"an in-tree PodGroup {where} exists that the bridge did not create: left as it "
                                "is (the Pods join it by name; no status is written back)", "MirrorConflict",
                       warning=True)]
    if relation == STALE:
        if metadata(mirror).get("deletionTimestamp"):
            return []                  # being deleted: created again once it is gone
        return [Action("delete", reason=str(metadata(mirror).get("uid") or ""))]
    out = []
    have = get(mirror, ("spec", "schedulingPolicy", "gang", "minCount"))
    if have != min_count(foreign) and not metadata(mirror).get("deletionTimestamp"):
        out.append(Action("minCount", min_count(foreign)))
    for path, value in copied(d, foreign).items():
        if get(mirror, path) != value:
            out.append(Action("event", f"{'.'.join(path)} changed to {value!r}: not applied, the in-tree "
                                       "PodGroup's is immutable", "MirrorImmutable", warning=True))
    if desired_status is not None and status.differs(desired_status, foreign.get("status")):
        out.append(Action("status", desired_status))
    return out
