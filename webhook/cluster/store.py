"""The webhook's watch cache store: the objects of one resource by "namespace/name",
each kept as its projection (webhook/cluster/projection.py) packed as compact JSON
bytes: a few hundred bytes per group, not the ~11 KB of the whole object as decoded
dicts, and nothing the garbage collector walks. A relist updates it in place (it
marks what it saw, then drops the rest), so there is never a second copy, and
lookups keep being answered. A `webhook.cluster.watch.Store`: pure, fed by the
list-and-watch loop (webhook/cluster/watch.py), tested without any server."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from webhook.cluster import projection
from webhook.cluster.watch import apply_event

@dataclass
class PackedStore:
    """Objects of one resource by "namespace/name", each packed (projection.pack)
    as `project` keeps it, and where the watch is."""
    objects: dict[str, bytes] = field(default_factory=dict)
    resource_version: str | None = None
    synced: bool = False
    project: Callable[[Any], Any] = projection.whole
    _seen: set[str] | None = field(default=None, repr=False)

    def begin(self) -> None:
        """A LIST starts: what it does not list again is dropped at `finish`."""
        self._seen = set() if self.objects else None

    def add(self, items: list) -> None:
        """One page of a LIST."""
        for obj in items:
            key = _key(obj)
            if key is not None:
                self.objects[key] = projection.pack(self.project(obj))
                if self._seen is not None:
                    self._seen.add(key)

    def finish(self, resource_version: str | None) -> None:
        """The LIST is complete: the whole truth at that version."""
        if self._seen is not None:
            for key in [k for k in self.objects if k not in self._seen]:
                del self.objects[key]
        self._seen = None
        self.resource_version = resource_version
        self.synced = True

    def replace(self, items: list[dict], resource_version: str | None) -> None:
        """A LIST in one page."""
        self.begin()
        self.add(items)
        self.finish(resource_version)

    def apply(self, event: dict) -> str | None:
        """One watch event, shaped as kubernetes.watch.Watch.stream yields it
        ({'type', 'object', 'raw_object'}). Returns watch.RELIST when the watch must
        start over from a fresh LIST (410 Gone, or an event it cannot read)."""
        return apply_event(self, event, lambda obj: self.add([obj]), self._drop)

    def _drop(self, obj: dict) -> None:
        key = _key(obj)
        if key is not None:
            self.objects.pop(key, None)

    def get(self, namespace: str, name: str) -> dict | None:
        packed = self.objects.get(f"{namespace}/{name}")
        return projection.unpack(packed) if packed is not None else None


def _key(obj: Any) -> str | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not meta.get("name"):
        return None
    return f"{meta.get('namespace') or ''}/{meta['name']}"
