"""What the rules may ask of the cluster. The engine depends on this interface
only; the server plugs in a watch cache, the CLI a static set of objects."""
from __future__ import annotations

import functools
import threading
from typing import Callable, Iterable, NamedTuple, Protocol

from webhook import kinds


class ClusterUnavailable(Exception):
    """The cluster could not be asked (unreachable, timed out, forbidden)."""


class NeedsNetwork(Exception):
    """A call declared `blocking` was made in a judgment that may not wait for
    the API server (the first attempt of webhook/server/admit.py, in the event
    loop). Raised before the call asks anything: the judgment is run again
    where it may wait."""


class Judgment:
    """One judgment in this thread (webhook/server/admit.py opens one around
    each): whether its `blocking` calls may wait for the API server, and the
    lookups answered so far, counted once with its answer."""

    __slots__ = ("may_wait", "lookups", "_outer")

    def __init__(self, may_wait: bool):
        self.may_wait = may_wait
        self.lookups: list[tuple[str, str]] = []     # (resource, source), source: cache | api | missing | unavailable

    def __enter__(self) -> "Judgment":
        self._outer = getattr(_local, "judgment", None)
        _local.judgment = self
        return self

    def __exit__(self, *exc) -> None:
        _local.judgment = self._outer


_local = threading.local()


def current_judgment() -> Judgment | None:
    return getattr(_local, "judgment", None)


def blocking(method: Callable) -> Callable:
    """Declares a view method that may wait for the API server. In a judgment
    that may not wait it raises NeedsNetwork instead of running: the
    declaration is the guard, so no method body has to remember a check."""
    @functools.wraps(method)
    def guarded(*args, **kwargs):
        judgment = getattr(_local, "judgment", None)
        if judgment is not None and not judgment.may_wait:
            raise NeedsNetwork(method.__qualname__)
        return method(*args, **kwargs)
    guarded.blocking = True
    return guarded


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

    # The gang rules (webhook/rules/gang_members.py) ask these two; a view without them is
    # not asked (those rules then judge only what the PodGroup says).
    def compositepodgroup(self, namespace: str, name: str) -> dict | None: ...

    def member(self, namespace: str, group: str, label: str, scheduler_name: str, policy: str | None):
        """One existing member of pod group `group` (a Member), found by the group label
        `label`; None when it has none. `scheduler_name`, `policy` (None: not compared): the
        joining Pod's, which a remembered member that agrees may answer for without asking."""

    @property
    def synced(self) -> dict[str, bool]:
        """Plural -> whether that part of the view is complete (a watch cache syncs)."""


class Member(NamedTuple):
    """What the gang rules compare of a pod group's existing member (GANG-2, GANG-3)."""
    scheduler_name: str
    preemption_policy: str | None          # None: unset (the scheduler reads PreemptLowerPriority)


def of_pod(pod: dict) -> Member:
    spec = pod.get("spec") if isinstance(pod, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    name, policy = spec.get("schedulerName"), spec.get("preemptionPolicy")
    return Member(name if isinstance(name, str) and name else "default-scheduler", policy if isinstance(policy, str) else None)


_KEPT = frozenset(k.kind for k in (*kinds.CACHED, kinds.COMPOSITE_PODGROUP))


class StaticView:
    """A view over a fixed list of objects (CLI `--context`, tests)."""

    disabled = False
    synced: dict[str, bool] = {}

    def __init__(self, objects: Iterable[dict] = (), authoritative: bool = False):
        self.authoritative = authoritative
        self._objects: dict[tuple[str, str, str], dict] = {}
        self._pods: list[dict] = []           # existing members, for the gang rules
        for obj in objects:
            if not isinstance(obj, dict):
                continue
            group = str(obj.get("apiVersion", "")).split("/")[0]
            meta = obj.get("metadata") or {}
            if group == kinds.SCHEDULING and obj.get("kind") in _KEPT and isinstance(meta, dict):
                self._objects[(obj["kind"], meta.get("namespace") or "default", meta.get("name") or "")] = obj
            elif obj.get("apiVersion") == "v1" and obj.get("kind") == "Namespace" and isinstance(meta, dict):
                self._objects[("Namespace", "", meta.get("name") or "")] = obj
            elif obj.get("apiVersion") == "v1" and obj.get("kind") == "Pod" and isinstance(meta, dict):
                self._pods.append(obj)

    def podgroup(self, namespace: str, name: str) -> dict | None:
        return self._objects.get(("PodGroup", namespace or "default", name))

    def workload(self, namespace: str, name: str) -> dict | None:
        return self._objects.get(("Workload", namespace or "default", name))

    def compositepodgroup(self, namespace: str, name: str) -> dict | None:
        return self._objects.get(("CompositePodGroup", namespace or "default", name))

    def member(self, namespace: str, group: str, label: str, scheduler_name: str, policy: str | None):
        if not self._pods:
            return None
        for pod in self._pods:
            meta = pod["metadata"]
            phase = (pod.get("status") or {}).get("phase") if isinstance(pod.get("status"), dict) else None
            if (meta.get("namespace") or "default") == (namespace or "default") and phase not in ("Succeeded", "Failed") \
                    and isinstance(meta.get("labels"), dict) and meta["labels"].get(label) == group:
                return of_pod(pod)
        return None

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

    def compositepodgroup(self, namespace: str, name: str) -> dict | None:
        return None

    def member(self, namespace: str, group: str, label: str, scheduler_name: str, policy: str | None):
        return None
