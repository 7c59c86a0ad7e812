"""The bridge's store for the one list-and-watch loop (webhook/cluster/watch.py):
the objects of one collection as small projected dicts, calling back with each
object that changed (old, new); a relist reports what vanished meanwhile. The
bridge watches few objects (the foreign PodGroups, their mirrors, the Pods it
joined), so they are kept as plain dicts. Pure: tested without any server."""
from __future__ import annotations

from typing import Callable

from webhook.cluster.watch import RELIST, apply_event, key_of

__all__ = ["RELIST", "BridgeStore", "key_of"]

Change = Callable[[dict | None, dict | None], None]


class BridgeStore:
    def __init__(self, project: Callable[[dict], dict], on_change: Change):
        self.objects: dict[tuple[str, str], dict] = {}
        self.project, self.on_change = project, on_change
        self.resource_version: str | None = None
        self.synced = False
        self._listing: list[dict] = []

    def _put(self, obj: dict) -> None:
        key = key_of(obj)
        if key is None:
            return
        new = self.project(obj)
        old = self.objects.get(key)
        self.objects[key] = new
        if old != new:
            self.on_change(old, new)

    def begin(self) -> None:
        self._listing = []

    def add(self, items: list) -> None:
        """A page of the LIST, held until it is complete: a part of a LIST is not the truth."""
        self._listing += [i for i in items if isinstance(i, dict)]

    def finish(self, resource_version: str | None) -> None:
        listing, self._listing = self._listing, []
        self.replace(listing, resource_version)

    def replace(self, items: list[dict], resource_version: str | None) -> None:
        """A whole LIST: what it lacks was deleted while nobody watched."""
        listed = {key_of(i) for i in items} - {None}
        for key in [k for k in self.objects if k not in listed]:
            self.on_change(self.objects.pop(key), None)
        for item in items:
            self._put(item)
        self.resource_version, self.synced = resource_version, True

    def apply(self, event: dict) -> str | None:
        """One watch event ({"type", "object"}); RELIST to start over."""
        return apply_event(self, event, self._put, self._deleted)

    def _deleted(self, obj: dict) -> None:
        key = key_of(obj)
        if key in self.objects:
            self.on_change(self.objects.pop(key), None)
