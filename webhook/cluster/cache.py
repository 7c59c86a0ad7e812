"""A per-process, watch-based cache of PodGroups and Workloads (the live
ClusterView of the server), with a bounded direct GET on a miss.

The event handling (`Store.apply`) is a pure function of the events the
`kubernetes` client's Watch yields, so it is tested without any server; the
informer threads around it are proven against a real API server in e2e."""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from webhook import kinds
from webhook.cluster.view import ClusterUnavailable

log = logging.getLogger("workload_webhook.cluster")

RELIST = "relist"
NAMESPACE_TTL = 30.0
GONE = 410
LIST_TIMEOUT = (5, 60)   # connect, read


@dataclass
class Store:
    """Objects of one resource by (namespace, name), and where the watch is."""
    objects: dict[tuple[str, str], dict] = field(default_factory=dict)
    resource_version: str | None = None
    synced: bool = False

    def replace(self, items: list[dict], resource_version: str | None) -> None:
        """The result of a LIST: the whole truth at that version."""
        self.objects = {_key(o): o for o in items if isinstance(o, dict) and _key(o)[1]}
        self.resource_version = resource_version
        self.synced = True

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
            self.objects[_key(obj)] = obj
        elif kind == "DELETED":
            self.objects.pop(_key(obj), None)
        elif kind != "BOOKMARK":
            return RELIST
        if rv:
            self.resource_version = rv
        return None

    def get(self, namespace: str, name: str) -> dict | None:
        return self.objects.get((namespace, name))


def _key(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


class Informer(threading.Thread):
    """LIST then WATCH one resource forever, relisting on 410 or errors (with backoff)."""

    def __init__(self, api, plural: str, versions: tuple[str, ...], watch_seconds: int = 300):
        super().__init__(name=f"informer-{plural}", daemon=True)
        self.api, self.plural, self.versions = api, plural, versions
        self.version: str | None = None
        self.store = Store()
        self.watch_seconds = watch_seconds
        self._stop_event = threading.Event()
        self.relists = 0

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

    def _list(self) -> None:
        result = self.api.list_cluster_custom_object(kinds.SCHEDULING, self.version, self.plural,
                                                     _request_timeout=LIST_TIMEOUT)
        self.store.replace(result.get("items") or [], (result.get("metadata") or {}).get("resourceVersion"))
        self.relists += 1
        from webhook.metrics import CACHE_SYNCED
        CACHE_SYNCED.labels(self.plural).set(1)

    def run(self) -> None:
        from kubernetes import watch
        from kubernetes.client.rest import ApiException
        backoff = 0.5
        while not self._stop_event.is_set():
            try:
                if self.version is None:
                    self.version = self._discover()
                self._list()
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
                    else:
                        continue      # the server ended the watch: resume from the last version
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
    """The server's ClusterView: answers from the watch caches, falls back to a
    direct GET bounded by `timeout` on a miss, and raises ClusterUnavailable
    (never blocks longer) when the API server does not answer."""

    authoritative = True
    disabled = False

    def __init__(self, api_client, timeout: float = 2.0):
        from kubernetes import client
        self.timeout = timeout
        self.api = client.CustomObjectsApi(api_client)
        self._namespaces: dict[str, tuple[float, dict | None]] = {}
        self.informers = {k.plural: Informer(self.api, k.plural, k.versions) for k in kinds.CACHED}

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

    def _lookup(self, plural: str, namespace: str, name: str) -> dict | None:
        from webhook.metrics import LOOKUPS
        inf = self.informers[plural]
        hit = inf.store.get(namespace, name)
        if hit is not None:
            LOOKUPS.labels(plural, "cache").inc()
            return hit
        try:
            found = self._get(inf, namespace, name)
        except ClusterUnavailable:
            LOOKUPS.labels(plural, "unavailable").inc()
            raise
        LOOKUPS.labels(plural, "api" if found is not None else "missing").inc()
        return found

    def _get(self, inf: Informer, namespace: str, name: str) -> dict | None:
        from kubernetes.client.rest import ApiException
        versions = (inf.version,) if inf.version else inf.versions
        started = time.monotonic()
        for version in versions:
            left = self.timeout - (time.monotonic() - started)
            if left <= 0:
                break
            try:
                return self.api.get_namespaced_custom_object(kinds.SCHEDULING, version, namespace, inf.plural, name,
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
        from kubernetes import client
        from kubernetes.client.rest import ApiException
        now = time.monotonic()
        hit = self._namespaces.get(name)
        if hit is not None and now - hit[0] < NAMESPACE_TTL:
            return hit[1]
        try:
            ns = client.CoreV1Api(self.api.api_client).read_namespace(name, _request_timeout=self.timeout)
            labels = dict(ns.metadata.labels or {})
        except ApiException as exc:
            if exc.status != 404:
                self._namespaces[name] = (now - NAMESPACE_TTL + 5, None)   # a failure is not retried for 5 s
                raise ClusterUnavailable(f"API server answered {exc.status} {exc.reason}") from None
            labels = None
        except Exception as exc:
            self._namespaces[name] = (now - NAMESPACE_TTL + 5, None)
            raise ClusterUnavailable(f"namespace {name!r} not read ({type(exc).__name__})") from None
        if len(self._namespaces) > 10_000:
            self._namespaces.clear()
        self._namespaces[name] = (now, labels)
        return labels

    def podgroup(self, namespace: str, name: str) -> dict | None:
        return self._lookup(kinds.PODGROUP.plural, namespace, name)

    def workload(self, namespace: str, name: str) -> dict | None:
        return self._lookup(kinds.WORKLOAD.plural, namespace, name)


def api_client(mode: str, kubeconfig: str | None):
    """An ApiClient from the in-cluster config or a kubeconfig, or None when
    mode is auto and there is neither. mode: auto | in-cluster | kubeconfig | disabled."""
    if mode == "disabled":
        return None
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException
    cfg = client.Configuration()
    try:
        if mode in ("auto", "in-cluster"):
            try:
                config.load_incluster_config(client_configuration=cfg)
                return client.ApiClient(cfg)
            except ConfigException:
                if mode == "in-cluster":
                    raise
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    except (ConfigException, OSError, TypeError) as exc:
        if mode == "auto":
            log.info("no cluster configuration (%s); pod mutation treats every PodGroup as missing", exc)
            return None
        raise ClusterUnavailable(f"cannot load the {mode} cluster configuration: {exc}") from None
    cfg.retries = 0
    return client.ApiClient(cfg)


def connect(mode: str, kubeconfig: str | None, timeout: float):
    """A started ClusterCache, or None when there is no cluster configuration."""
    api = api_client(mode, kubeconfig)
    return ClusterCache(api, timeout).start() if api is not None else None
