"""A per-process, watch-based cache of PodGroups (the live ClusterView of the
server), sized by what admission reads, with a bounded direct GET on a miss.

- Each PodGroup is kept as its projection, packed (webhook/cluster/store.py).
- The list-and-watch is the service's one loop (webhook/cluster/watch.py, on
  webhook/cluster/api.py): a paginated LIST (LIST_PAGE objects a page, each
  parsed with orjson and projected before the next is read) within
  LIST_DEADLINE, the watch from its resourceVersion, 410 Gone relists.
- Workloads are not watched: only PG-2 reads one, once per PodGroup create,
  and a job's controller creates its Workload a moment before its PodGroup, so
  a watch would usually not have it yet either. One bounded GET each
  (bench/README.md has the numbers).
- The gang rules (webhook/rules/gang_members.py) read a PodGroup's
  CompositePodGroup parents with a GET (only groups in a hierarchy) and one
  existing member with a bounded, remembered LIST (webhook/cluster/members.py).

The store is a pure function of its events, tested without any server; the
informer threads around it are proven against a real API server in e2e."""
from __future__ import annotations

import logging
import time

from webhook import kinds
from webhook.cluster import api as api_mod
from webhook.cluster import members as members_mod
from webhook.cluster import projection
from webhook.cluster.api import Api
from webhook.cluster.store import PackedStore
from webhook.view import ClusterUnavailable, blocking, current_judgment
from webhook.cluster.watch import RELIST, ListWatch

log = logging.getLogger("workload_webhook.cluster")

__all__ = ["RELIST", "ClusterCache", "Informer", "PackedStore", "api_client", "connect"]
NAMESPACE_TTL = 30.0
LIST_TIMEOUT = api_mod.LIST_TIMEOUT   # connect, read: per page
LIST_PAGE = 2000     # objects per page: kube-apiserver's cost per page grows with the objects it holds
LIST_DEADLINE = api_mod.LIST_DEADLINE    # seconds for a whole LIST, pages included
#: Pod mutation reads a PodGroup per Pod: watched. PG-2's Workloads: a GET per PodGroup create.
WATCHED = (kinds.PODGROUP,)


class Informer(ListWatch):
    """The cache's list-and-watch of one scheduling.k8s.io resource (webhook/cluster/watch.py)
    into a PackedStore, in the first version the cluster serves, with the cache's metrics."""

    def __init__(self, api, plural: str, versions: tuple[str, ...], watch_seconds: int = 300):
        self.plural, self.versions = plural, versions
        self.version: str | None = None
        super().__init__(Api.of(api), self._collection, PackedStore(project=projection.FOR_PLURAL.get(
            plural, projection.whole)), watch_seconds=watch_seconds, page_size=LIST_PAGE,
            list_deadline=LIST_DEADLINE, name=f"informer-{plural}", label=plural)

    def _collection(self) -> str:
        if self.version is None:
            self.version = self._discover()
        return api_mod.path(kinds.SCHEDULING, self.version, self.plural)

    def _discover(self) -> str:
        """The first version of the resource the cluster serves (v1beta1, else v1alpha3)."""
        found = self.api.served_version(kinds.SCHEDULING, self.plural, self.versions, timeout=LIST_TIMEOUT)
        if found is None:
            raise ClusterUnavailable(f"the cluster serves none of scheduling.k8s.io/{{{','.join(self.versions)}}} "
                                     f"{self.plural}")
        return found

    def restore(self, version: str, resource_version: str, objects: dict[str, bytes]) -> None:
        """Start from a LIST made elsewhere (webhook/cluster/snapshot.py): the watch resumes
        from its resourceVersion, and a 410 relists as usual."""
        self.version = version
        self.path = self._collection()
        self.store.objects = objects
        self.store.finish(resource_version)
        self.start_from(f"{len(objects)} objects from the master's LIST, at resourceVersion {resource_version}")

    def _metrics(self) -> None:
        """Each series at zero from run() on, not before: the master's LIST (snapshot.py) runs an Informer
        in a child that never runs, whose zeros would hold the workers' livemin gauges at zero."""
        from webhook import metrics          # after PROMETHEUS_MULTIPROC_DIR is set (serve_command)
        self._m_synced, self._m_objects, self._m_last_event, self._m_relists = (
            m.labels(self.plural) for m in (metrics.CACHE_SYNCED, metrics.CACHE_OBJECTS, metrics.CACHE_LAST_EVENT,
                                            metrics.CACHE_RELISTS))

    def on_listed(self, how: str, relisted: bool) -> None:
        log.info("%s synced: %s", self.plural, how)
        self._m_synced.set(1)
        if relisted:
            self._m_relists.inc()
        self.on_fresh()

    def on_fresh(self) -> None:
        self._m_last_event.set(time.time())
        self._m_objects.set(len(self.store.objects))

    def run(self) -> None:
        self._metrics()
        super().run()


class ClusterCache:
    """The server's ClusterView: answers PodGroups from the watch cache and
    Workloads with a GET; a miss falls back to a direct GET bounded by `timeout`,
    and ClusterUnavailable is raised (never blocks longer) when the API server
    does not answer. Every method that asks the API server is declared
    `@blocking` (webhook/view.py): the event loop's judgments never
    wait for it (tests/unit/test_judgment_dispatch.py checks none is missed)."""

    authoritative = True
    disabled = False

    def __init__(self, api_client, timeout: float = 2.0, snapshot: dict | None = None):
        """`snapshot`: the master's LIST (webhook/cluster/snapshot.py: restore()), to start from."""
        self.timeout = timeout
        self.api = Api.of(api_client)
        self.api_client = api_client          # webhook.cluster.events writes with it
        self._namespaces: dict[str, tuple[float, dict | None]] = {}
        self.informers = {k.plural: Informer(self.api, k.plural, k.versions) for k in WATCHED}
        self.members = members_mod.Members(self.api, timeout)
        for plural, listed in (snapshot or {}).items():
            if plural in self.informers:
                self.informers[plural].restore(*listed)

    def start(self) -> "ClusterCache":
        for inf in self.informers.values():
            inf.start()
        return self

    def stop(self) -> None:
        for inf in self.informers.values():
            inf.stop()

    @property
    def synced(self) -> dict[str, bool]:
        return {name: inf.store.synced for name, inf in self.informers.items()}

    def _lookup(self, kind: kinds.Kind, namespace: str, name: str) -> dict | None:
        inf = self.informers.get(kind.plural)
        if inf is not None:
            hit = inf.store.get(namespace, name)
            if hit is not None:
                _answered(kind.plural, "cache")
                return hit
        try:
            found = self._get(kind, namespace, name)
        except ClusterUnavailable:
            _answered(kind.plural, "unavailable")
            raise
        _answered(kind.plural, "api" if found is not None else "missing")
        return found

    def _served_version(self, kind: kinds.Kind) -> tuple[str, ...]:
        """The version the informers found served (one GET), else each of the kind's in turn."""
        found = next((inf.version for inf in self.informers.values() if inf.version), None)
        return (found,) if found in kind.versions else kind.versions

    @blocking
    def _get(self, kind: kinds.Kind, namespace: str, name: str) -> dict | None:
        started = time.monotonic()
        for version in self._served_version(kind):
            left = self.timeout - (time.monotonic() - started)
            if left <= 0:
                break
            try:
                status, reason, obj = _read(self.api, api_mod.path(kinds.SCHEDULING, version, kind.plural, namespace, name),
                                            left)
            except Exception as exc:
                raise ClusterUnavailable(f"API server did not answer within {self.timeout:g}s "
                                         f"({type(exc).__name__})") from None
            if status == 200:
                return obj
            if status == 404:
                continue      # not found in this version (or this version is not served)
            raise ClusterUnavailable(f"API server answered {status} {reason}")
        if time.monotonic() - started >= self.timeout:
            raise ClusterUnavailable(f"API server did not answer within {self.timeout:g}s")
        return None

    def namespace_labels(self, name: str) -> dict | None:
        """A namespace's labels (enforcement by namespace), read with a bounded GET
        and kept for NAMESPACE_TTL seconds: labels change rarely, admission is hot."""
        now = time.monotonic()
        hit = self._namespaces.get(name)
        if hit is not None and now - hit[0] < NAMESPACE_TTL:
            return hit[1]
        labels = self._read_namespace(name, now)
        if len(self._namespaces) > 10_000:
            self._namespaces.clear()
        self._namespaces[name] = (now, labels)
        return labels

    @blocking
    def _read_namespace(self, name: str, now: float) -> dict | None:
        try:
            status, reason, ns = _read(self.api, api_mod.path("", "v1", "namespaces", name=name), self.timeout)
        except Exception as exc:
            self._namespaces[name] = (now - NAMESPACE_TTL + 5, None)   # a failure is not retried for 5 s
            raise ClusterUnavailable(f"namespace {name!r} not read ({type(exc).__name__})") from None
        if status == 200:
            labels = (ns.get("metadata") or {}).get("labels")
            return dict(labels) if isinstance(labels, dict) else {}
        if status == 404:
            return None
        self._namespaces[name] = (now - NAMESPACE_TTL + 5, None)
        raise ClusterUnavailable(f"API server answered {status} {reason}")

    def podgroup(self, namespace: str, name: str) -> dict | None:
        return self._lookup(kinds.PODGROUP, namespace, name)

    def workload(self, namespace: str, name: str) -> dict | None:
        return self._lookup(kinds.WORKLOAD, namespace, name)

    def compositepodgroup(self, namespace: str, name: str) -> dict | None:
        """A PodGroup's parent (the gang rules walk to the root): a GET, only for groups in a hierarchy."""
        return self._lookup(kinds.COMPOSITE_PODGROUP, namespace, name)

    def member(self, namespace: str, group: str, label: str, scheduler_name: str, policy: str | None):
        """One existing member of `group` (webhook/cluster/members.py), or None. Counted as a lookup of
        pods only when the API server was asked (a remembered answer is no lookup: not counted per join)."""
        try:
            found, source = self.members.member(namespace, group, label, scheduler_name, policy)
        except ClusterUnavailable:
            _answered("pods", "unavailable")
            raise
        if source != "cache":
            _answered("pods", source)
        return found


def _read(api: Api, path: str, timeout) -> tuple[int, str, dict]:
    """(status, reason, the object when found) of one GET; only the blocking methods call it."""
    reply = api.send("GET", path, timeout=timeout)
    body = reply.read()
    return reply.status, reply.reason, api_mod.decode(body) if reply.status == 200 else {}


def _answered(resource: str, source: str) -> None:
    """A lookup's answer (cache | api | missing | unavailable): counted with the answer
    of the judgment under way (webhook/server/admit.py), so a judgment run again
    after NeedsNetwork counts it once; outside a judgment (the audit) at once."""
    judgment = current_judgment()
    if judgment is not None:
        judgment.lookups.append((resource, source))
    else:
        from webhook.metrics import LOOKUPS
        LOOKUPS.labels(resource, source).inc()


def api_client(mode: str, kubeconfig: str | None):
    """An ApiClient found as kubectl finds one (webhook/cluster/credentials.py), or None
    when mode is auto and there is none. mode: auto | in-cluster | kubeconfig | disabled.
    Raises ClusterUnavailable (one line) when the configuration asked for is not usable."""
    from webhook.cluster import credentials
    api = credentials.api_client(mode, kubeconfig)
    if api is None and mode == "auto":
        log.info("no cluster configuration; pod mutation treats every PodGroup as missing")
    return api


def connect(mode: str, kubeconfig: str | None, timeout: float, snapshot: dict | None = None):
    """A started ClusterCache, or None when there is no cluster configuration."""
    api = api_client(mode, kubeconfig)
    return ClusterCache(api, timeout, snapshot).start() if api is not None else None
