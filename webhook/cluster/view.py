"""What the rules may ask of the cluster. The engine depends on this interface
only; the server plugs in a watch cache, the CLI a static set of objects."""
from __future__ import annotations

import threading
from typing import Iterable, Protocol

from webhook import kinds


class ClusterUnavailable(Exception):
    """The cluster could not be asked (unreachable, timed out, forbidden)."""


class NeedsNetwork(Exception):
    """A lookup would have to ask the API server, in a thread that must not
    wait for it (the server's event loop: webhook/server/worker.py). The
    caller judges the request again in a thread that may."""


_thread = threading.local()


def forbid_network_in_this_thread() -> None:
    """From now on, a view's network call in this thread raises NeedsNetwork."""
    _thread.no_network = True


def network_call() -> None:
    """Called by a view right before it asks the API server."""
    if getattr(_thread, "no_network", False):
        raise NeedsNetwork()


class ClusterView(Protocol):
    # True when "not found" means the object does not exist (a live cluster),
    # False when the view may simply not know it (offline files).
    authoritative: bool
    # True when there is no cluster at all (nothing is known, nothing is looked up).
    disabled: bool

    def podgroup(self, namespace: str, name: str) -> dict | None: ...

    def workload(self, namespace: str, name: str) -> dict | None: ...

    def namespace_labels(self, name: str) -> dict | None:
        """The labels of a namespace (enforcement by namespace); None when unknown."""

    @property
    def synced(self) -> dict[str, bool]:
        """Plural -> whether that part of the view is complete (a watch cache syncs)."""


class StaticView:
    """A view over a fixed list of objects (CLI `--context`, tests)."""

    disabled = False
    synced: dict[str, bool] = {}

    def __init__(self, objects: Iterable[dict] = (), authoritative: bool = False):
        self.authoritative = authoritative
        self._objects: dict[tuple[str, str, str], dict] = {}
        for obj in objects:
            if not isinstance(obj, dict):
                continue
            group = str(obj.get("apiVersion", "")).split("/")[0]
            meta = obj.get("metadata") or {}
            if group == kinds.SCHEDULING and obj.get("kind") in {k.kind for k in kinds.CACHED} and isinstance(meta, dict):
                self._objects[(obj["kind"], meta.get("namespace") or "default", meta.get("name") or "")] = obj
            elif obj.get("apiVersion") == "v1" and obj.get("kind") == "Namespace" and isinstance(meta, dict):
                self._objects[("Namespace", "", meta.get("name") or "")] = obj

    def podgroup(self, namespace: str, name: str) -> dict | None:
        return self._objects.get(("PodGroup", namespace or "default", name))

    def workload(self, namespace: str, name: str) -> dict | None:
        return self._objects.get(("Workload", namespace or "default", name))

    def namespace_labels(self, name: str) -> dict | None:
        ns = self._objects.get(("Namespace", "", name))
        labels = ((ns or {}).get("metadata") or {}).get("labels") if ns else None
        return dict(labels) if isinstance(labels, dict) else ({} if ns else None)


class DisabledView:
    """No cluster configuration at all: nothing is known, nothing is looked up."""

    authoritative = False
    disabled = True
    synced: dict[str, bool] = {}

    def podgroup(self, namespace: str, name: str) -> dict | None:
        return None

    def workload(self, namespace: str, name: str) -> dict | None:
        return None

    def namespace_labels(self, name: str) -> dict | None:
        return None
