"""What the gang model keeps, fed by the one list-and-watch loop (webhook/cluster/watch.py):
two `Store`s over one `Gangs`, the PodGroups with a gang policy and the Pods that name a
PodGroup (`spec.schedulingGroup.podGroupName`, what kube-scheduler gangs by). Per Pod only
what the state machine needs (webhook/gangs/state.py `GangMember`: phase, node, the scheduler's
reason, deletion), and equal Members are one object (a thousand Running Pods on a node share
one), so a Pod costs its name and a dict slot: bench/gang_bench.py measures it. Pods of no
group are not kept. Every change marks its gang dirty for the model to look at. Pure and
thread-safe: the watch threads write, the model's thread reads; tested without any server."""
from __future__ import annotations

import datetime as dt
import threading

from webhook.cluster.watch import apply_event
from webhook.gangs.state import CONDITION, GangGroup, GangMember

Key = tuple[str, str]           # (namespace, PodGroup name)
INTERNED = 65_536               # distinct Members kept shared (nodes x phases x reasons); past it, cleared


def _timestamp(value) -> float:
    if not isinstance(value, str):
        return 0.0
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _condition(obj: dict, kind: str) -> dict:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return {}


def group_of(pg: dict) -> GangGroup | None:
    """A PodGroup as the model keeps it; None when it has no gang policy."""
    gang = ((pg.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
    if not isinstance(gang, dict):
        return None
    meta = pg.get("metadata") or {}
    cond = _condition(pg, CONDITION)
    try:
        min_count = int(gang.get("minCount") or 1)
    except (TypeError, ValueError):
        min_count = 1
    return GangGroup(min_count=min_count, created=_timestamp(meta.get("creationTimestamp")),
                 condition=str(cond.get("status") or ""), reason=str(cond.get("reason") or ""),
                 deleting=bool(meta.get("deletionTimestamp")), uid=str(meta.get("uid") or ""))


def member_of(pod: dict) -> tuple[str, GangMember] | None:
    """(the PodGroup's name, the GangMember) of a Pod that names one, else None."""
    spec = pod.get("spec") or {}
    group = (spec.get("schedulingGroup") or {}).get("podGroupName") if isinstance(spec, dict) else None
    if not isinstance(group, str) or not group:
        return None
    cond = _condition(pod, "PodScheduled")
    reason = str(cond.get("reason") or "") if cond.get("status") == "False" else ""
    return group, GangMember(phase=str((pod.get("status") or {}).get("phase") or "Pending"),
                         node=str(spec.get("nodeName") or ""), reason=reason,
                         deleting=bool((pod.get("metadata") or {}).get("deletionTimestamp")))


class Gangs:
    """The PodGroups with a gang policy and the members of every named group, by (namespace, name)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.groups: dict[Key, GangGroup] = {}
        self.members: dict[Key, dict[str, GangMember]] = {}
        self.dirty: set[Key] = set()
        self._interned: dict[GangMember, GangMember] = {}

    def intern(self, member: GangMember) -> GangMember:
        if len(self._interned) >= INTERNED:
            self._interned.clear()
        return self._interned.setdefault(member, member)

    def take_dirty(self) -> set[Key]:
        with self.lock:
            dirty, self.dirty = self.dirty, set()
        return dirty

    def snapshot(self, key: Key) -> tuple[GangGroup | None, tuple[GangMember, ...]]:
        with self.lock:
            return self.groups.get(key), tuple((self.members.get(key) or {}).values())

    def pods(self) -> int:
        with self.lock:
            return sum(len(m) for m in self.members.values())


def _key(obj: dict) -> Key | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not meta.get("name"):
        return None
    return str(meta.get("namespace") or ""), str(meta["name"])


class _Store:
    """The `webhook.cluster.watch.Store` methods; a subclass puts and drops one object."""

    def __init__(self, gangs: Gangs):
        self.gangs = gangs
        self.resource_version: str | None = None
        self.synced = False
        self._seen: set[Key] | None = None

    def _put(self, key: Key, obj: dict) -> None: ...
    def _drop(self, key: Key, obj: dict | None) -> None: ...
    def _keys(self) -> list[Key]: ...

    def begin(self) -> None:
        self._seen = set()

    def add(self, items: list) -> None:
        with self.gangs.lock:
            for obj in items:
                key = _key(obj)
                if key is not None:
                    self._put(key, obj)
                    if self._seen is not None:
                        self._seen.add(key)

    def finish(self, resource_version: str | None) -> None:
        """The LIST is whole: what it did not list was deleted while nobody watched."""
        with self.gangs.lock:
            if self._seen is not None:
                for key in [k for k in self._keys() if k not in self._seen]:
                    self._drop(key, None)
            self._seen = None
        self.resource_version, self.synced = resource_version, True

    def apply(self, event: dict) -> str | None:
        return apply_event(self, event, self._locked(self._put), self._locked(self._drop))

    def _locked(self, change):
        def under_lock(obj: dict) -> None:
            key = _key(obj)
            if key is not None:
                with self.gangs.lock:
                    change(key, obj)
        return under_lock

    @property
    def objects(self) -> range:
        """Sized like the objects kept (what the loop's LIST line counts), without a copy."""
        return range(self._count())

    def _count(self) -> int:
        return len(self._keys())


class PodGroupStore(_Store):
    def _put(self, key: Key, obj: dict) -> None:
        group = group_of(obj)
        if group is None:
            self._drop(key, obj)
        elif self.gangs.groups.get(key) != group:
            self.gangs.groups[key] = group
            self.gangs.dirty.add(key)

    def _drop(self, key: Key, obj: dict | None) -> None:
        if self.gangs.groups.pop(key, None) is not None:
            self.gangs.dirty.add(key)

    def _keys(self) -> list[Key]:
        return list(self.gangs.groups)


class PodStore(_Store):
    """Pods by (namespace, name) into their group's members (a Pod's group never changes:
    spec.schedulingGroup is immutable)."""

    def _put(self, key: Key, obj: dict) -> None:
        found = member_of(obj)
        if found is None:
            return
        group = (key[0], found[0])
        members = self.gangs.members.setdefault(group, {})
        member = self.gangs.intern(found[1])
        if members.get(key[1]) is not member:
            members[key[1]] = member
            self.gangs.dirty.add(group)

    def _drop(self, key: Key, obj: dict | None) -> None:
        found = member_of(obj) if obj is not None else None
        groups = [(key[0], found[0])] if found else [g for g, m in self.gangs.members.items()
                                                      if g[0] == key[0] and key[1] in m]
        for group in groups:
            members = self.gangs.members.get(group)
            if members is not None and members.pop(key[1], None) is not None:
                self.gangs.dirty.add(group)
                if not members:
                    del self.gangs.members[group]

    def finish(self, resource_version: str | None) -> None:
        with self.gangs.lock:
            if self._seen is not None:        # one pass over the groups, not one per vanished Pod
                for group, members in list(self.gangs.members.items()):
                    gone = [name for name in members if (group[0], name) not in self._seen]
                    for name in gone:
                        del members[name]
                    if gone:
                        self.gangs.dirty.add(group)
                    if not members:
                        del self.gangs.members[group]
            self._seen = None
        self.resource_version, self.synced = resource_version, True

    def _keys(self) -> list[Key]:
        return [(g[0], name) for g, m in self.gangs.members.items() for name in m]

    def _count(self) -> int:
        return sum(len(m) for m in self.gangs.members.values())
