"""A per-process, watch-based cache of PodGroups (the live ClusterView of the
server), sized by what admission reads, with a bounded direct GET on a miss.

- Each PodGroup is kept as its projection (webhook/cluster/projection.py),
  packed as compact JSON bytes: a few hundred bytes per group, not the
  ~11 KB of the whole object as decoded dicts, and nothing the garbage
  collector walks.
- The LIST is paginated (LIST_PAGE objects a page, each parsed with orjson
  and projected before the next is read); the watch resumes from the list's
  resourceVersion. 410 Gone (an expired watch or continue token) relists.
- A relist updates the live store in place (it marks what it saw, then drops
  the rest), so there is never a second copy, and lookups keep being answered.
- Workloads are not watched: only PG-2 reads one, once per PodGroup create,
  and a job's controller creates its Workload a moment before its PodGroup, so
  a watch would usually not have it yet either. One bounded GET each
  (bench/README.md has the numbers).

The event handling (`Store.apply`) is a pure function of the events the
`kubernetes` client's Watch yields, so it is tested without any server; the
informer threads around it are proven against a real API server in e2e."""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from webhook import collector, kinds
from webhook.cluster import projection
from webhook.cluster.view import ClusterUnavailable, blocking, current_judgment

log = logging.getLogger("workload_webhook.cluster")

RELIST = "relist"
NAMESPACE_TTL = 30.0
GONE = 410
LIST_TIMEOUT = (5, 60)   # connect, read: per page
LIST_PAGE = 2000     # objects per page: kube-apiserver's cost per page grows with the objects it holds
LIST_DEADLINE = 900.0    # seconds for a whole LIST, pages included
#: Pod mutation reads a PodGroup per Pod: watched. PG-2's Workloads: a GET per PodGroup create.
WATCHED = (kinds.PODGROUP,)


@dataclass
class Store:
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
        ({'type', 'object', 'raw_object'}). Returns RELIST when the watch must
        start over from a fresh LIST (410 Gone, or an event it cannot read)."""
        kind = event.get("type")
        obj = event.get("raw_object", event.get("object"))
        if not isinstance(obj, dict):
            return RELIST
        if kind == "ERROR":
            return RELIST         # 410 Gone or any other error: start over from a LIST
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            self.add([obj])
        elif kind == "DELETED":
            key = _key(obj)
            if key is not None:
                self.objects.pop(key, None)
        elif kind != "BOOKMARK":
            return RELIST
        if rv:
            self.resource_version = rv
        return None

    def get(self, namespace: str, name: str) -> dict | None:
        packed = self.objects.get(f"{namespace}/{name}")
        return projection.unpack(packed) if packed is not None else None


def _key(obj: Any) -> str | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not meta.get("name"):
        return None
    return f"{meta.get('namespace') or ''}/{meta['name']}"


class Informer(threading.Thread):
    """LIST (paginated) then WATCH one resource forever, relisting on 410 or errors (with backoff)."""

    def __init__(self, api, plural: str, versions: tuple[str, ...], watch_seconds: int = 300):
        super().__init__(name=f"informer-{plural}", daemon=True)
        self.api, self.plural, self.versions = api, plural, versions
        self.version: str | None = None
        self.store = Store(project=projection.FOR_PLURAL.get(plural, projection.whole))
        self.watch_seconds = watch_seconds
        self._stop_event = threading.Event()
        self.relists = 0
        self.bookmarks = 0
        self._restored: str | None = None

    def _metrics(self) -> None:
        """Each series at zero from run() on, not before: the master's LIST (snapshot.py) runs an Informer
        in a child that never runs, whose zeros would hold the workers' livemin gauges at zero."""
        from webhook import metrics          # after PROMETHEUS_MULTIPROC_DIR is set (serve_command)
        self._m_synced, self._m_objects, self._m_last_event, self._m_relists = (
            m.labels(self.plural) for m in (metrics.CACHE_SYNCED, metrics.CACHE_OBJECTS, metrics.CACHE_LAST_EVENT,
                                            metrics.CACHE_RELISTS))

    def stop(self) -> None:
        self._stop_event.set()

    def _discover(self) -> str:
        """The first version of the resource the cluster serves (v1beta1, else v1alpha3)."""
        from kubernetes.client.rest import ApiException
        for v in self.versions:
            try:
                self.api.list_cluster_custom_object(kinds.SCHEDULING, v, self.plural, limit=1,
                                                    _request_timeout=LIST_TIMEOUT)
                return v
            except ApiException as exc:
                if exc.status != 404:
                    raise
        raise ClusterUnavailable(f"the cluster serves none of scheduling.k8s.io/{{{','.join(self.versions)}}} {self.plural}")

    def _page(self, token: str | None) -> dict:
        """One page, its items already in the store; returns the page's metadata."""
        resp = self.api.list_cluster_custom_object(kinds.SCHEDULING, self.version, self.plural, limit=LIST_PAGE,
                                                   _continue=token, _preload_content=False,
                                                   _request_timeout=LIST_TIMEOUT)
        try:
            data = resp.data
        finally:
            resp.release_conn()
        # A page decodes to ~60 tracked containers per object, none of them in a cycle, and
        # freed by reference counting once projected: the cyclic collector, triggered by
        # their allocation, would walk them again and again (it tripled the LIST's CPU).
        # The pause is process-wide but lasts one page (~20 ms at 2,000 objects); the
        # event loop's requests allocate few containers meanwhile.
        with collector.paused():
            page = projection.unpack(data)
            if not isinstance(page, dict):
                return {}
            self.store.add(page.get("items") or [])
            return page.get("metadata") or {}

    def _list(self) -> str:
        """Page by page into the live store; the watch resumes from the first page's
        resourceVersion (every page of a LIST is read at that one version)."""
        started = time.monotonic()
        token, version, pages = None, None, 0
        self.store.begin()
        while True:
            meta = self._page(token)
            version = version or meta.get("resourceVersion")
            pages += 1
            token = meta.get("continue")
            if self._stop_event.is_set():
                raise ClusterUnavailable("stopped")   # a part of a LIST is not the truth: nothing dropped
            if not token:
                break
            if time.monotonic() - started > LIST_DEADLINE:
                raise ClusterUnavailable(f"listing {self.plural} took over {LIST_DEADLINE:g} s")
        self.store.finish(version)
        self.relists += 1
        return f"{len(self.store.objects)} objects in {pages} pages, {time.monotonic() - started:.2f} s, " \
               f"at resourceVersion {version}"

    def restore(self, version: str, resource_version: str, objects: dict[str, bytes]) -> None:
        """Start from a LIST made elsewhere (webhook/cluster/snapshot.py): the watch resumes
        from its resourceVersion, and a 410 relists as usual."""
        self.version = version
        self.store.objects = objects
        self.store.finish(resource_version)
        self._restored = f"{len(objects)} objects from the master's LIST, at resourceVersion {resource_version}"

    def _synced(self, how: str) -> None:
        log.info("%s synced: %s", self.plural, how)
        self._m_synced.set(1)
        self._fresh()

    def _fresh(self) -> None:
        """The cache is as fresh as now: a LIST, a watch event or a bookmark just came."""
        self._m_last_event.set(time.time())
        self._m_objects.set(len(self.store.objects))

    def run(self) -> None:
        from kubernetes import watch
        from kubernetes.client.rest import ApiException
        backoff = 0.5
        self._metrics()
        while not self._stop_event.is_set():
            try:
                if self._restored is not None:
                    self._synced(self._restored)
                    self._restored = None
                else:
                    if self.version is None:
                        self.version = self._discover()
                    relisting = self.store.synced     # the first LIST of this worker is no relist
                    self._synced(self._list())
                    if relisting:
                        self._m_relists.inc()
                backoff = 0.5
                while not self._stop_event.is_set():
                    w = watch.Watch()
                    for event in w.stream(self.api.list_cluster_custom_object, kinds.SCHEDULING, self.version,
                                          self.plural, resource_version=self.store.resource_version,
                                          allow_watch_bookmarks=True, timeout_seconds=self.watch_seconds,
                                          # a half-open connection must not freeze the cache forever
                                          _request_timeout=(5, self.watch_seconds + 30)):
                        if self.store.apply(event) == RELIST or self._stop_event.is_set():
                            w.stop()
                            break
                        if event.get("type") == "BOOKMARK":
                            self.bookmarks += 1
                        self._fresh()     # bookmarks (allow_watch_bookmarks) keep a quiet cluster fresh
                    else:
                        self._fresh()     # the server ended a healthy watch with nothing more to say
                        continue      # resume from the last version
                    break             # RELIST or stop
            except ApiException as exc:
                if exc.status == GONE:
                    log.info("watch of %s expired (410); relisting", self.plural)
                    continue
                log.warning("watching %s failed: %s %s", self.plural, exc.status, exc.reason)
            except Exception as exc:  # network errors, bad config: keep trying, say so
                log.warning("watching %s failed: %s", self.plural, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
            self._stop_event.wait(backoff)
            backoff = min(backoff * 2, 30.0)


class ClusterCache:
    """The server's ClusterView: answers PodGroups from the watch cache and
    Workloads with a GET; a miss falls back to a direct GET bounded by `timeout`,
    and ClusterUnavailable is raised (never blocks longer) when the API server
    does not answer. Every method that asks the API server is declared
    `@blocking` (webhook/cluster/view.py): the event loop's judgments never
    wait for it (tests/unit/test_judgment_dispatch.py checks none is missed)."""

    authoritative = True
    disabled = False

    def __init__(self, api_client, timeout: float = 2.0, snapshot: dict | None = None):
        """`snapshot`: the master's LIST (webhook/cluster/snapshot.py: restore()), to start from."""
        from kubernetes import client
        self.timeout = timeout
        self.api = client.CustomObjectsApi(api_client)
        self.api_client = api_client          # webhook.cluster.events writes with it
        self._namespaces: dict[str, tuple[float, dict | None]] = {}
        self.informers = {k.plural: Informer(self.api, k.plural, k.versions) for k in WATCHED}
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
        from kubernetes.client.rest import ApiException
        started = time.monotonic()
        for version in self._served_version(kind):
            left = self.timeout - (time.monotonic() - started)
            if left <= 0:
                break
            try:
                return self.api.get_namespaced_custom_object(kinds.SCHEDULING, version, namespace, kind.plural, name,
                                                             _request_timeout=left)
            except ApiException as exc:
                if exc.status == 404:
                    continue      # not found in this version (or this version is not served)
                raise ClusterUnavailable(f"API server answered {exc.status} {exc.reason}") from None
            except Exception as exc:
                raise ClusterUnavailable(f"API server did not answer within {self.timeout:g}s "
                                         f"({type(exc).__name__})") from None
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
        from kubernetes import client
        from kubernetes.client.rest import ApiException
        try:
            ns = client.CoreV1Api(self.api.api_client).read_namespace(name, _request_timeout=self.timeout)
            return dict(ns.metadata.labels or {})
        except ApiException as exc:
            if exc.status == 404:
                return None
            self._namespaces[name] = (now - NAMESPACE_TTL + 5, None)   # a failure is not retried for 5 s
            raise ClusterUnavailable(f"API server answered {exc.status} {exc.reason}") from None
        except Exception as exc:
            self._namespaces[name] = (now - NAMESPACE_TTL + 5, None)
            raise ClusterUnavailable(f"namespace {name!r} not read ({type(exc).__name__})") from None

    def podgroup(self, namespace: str, name: str) -> dict | None:
        return self._lookup(kinds.PODGROUP, namespace, name)

    def workload(self, namespace: str, name: str) -> dict | None:
        return self._lookup(kinds.WORKLOAD, namespace, name)


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


def raw_get(api, path: str, accept: str, timeout) -> tuple[int, bytes]:
    """GET a path of the API server that no typed client covers (discovery, /metrics)."""
    request = api.param_serialize("GET", path, header_params={"Accept": accept}, auth_settings=["BearerToken"])
    resp = api.call_api(*request, _request_timeout=timeout)
    return resp.status, resp.read() or b""


def connect(mode: str, kubeconfig: str | None, timeout: float, snapshot: dict | None = None):
    """A started ClusterCache, or None when there is no cluster configuration."""
    api = api_client(mode, kubeconfig)
    return ClusterCache(api, timeout, snapshot).start() if api is not None else None
