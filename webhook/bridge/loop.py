"""The bridge's reconcile loop, in a process of its own beside every serving Pod's gunicorn
master (webhook/server/bridge_process.py); only the
replica holding the Lease writes (webhook.bridge.lease).

While it leads it watches the foreign PodGroups of each dialect that is on, the
mirrors (in-tree PodGroups with the bridge's label) and the Pods it joined (the same
label, added at admission), and reconciles one group at a time: a LIST on start and
every relist sees everything again (a restart resyncs), a resync every
bridge.resyncSeconds, a failed write is retried with backoff. What to do is decided
by webhook.foreign.mirror.plan and webhook.foreign.status (pure); this module only
reads and writes."""
from __future__ import annotations

import datetime
import heapq
import logging
import os
import socket
import threading
import time
import uuid

from webhook.foreign import mirror as mirror_mod
from webhook.foreign import status as status_mod
from webhook.foreign.dialects import BRIDGE_LABEL, BY_NAME, Dialect, enabled
from webhook.bridge.lease import Lease
from webhook.bridge.watch import BridgeStore
from webhook.cluster import events
from webhook.cluster.api import BRIDGE, Api, path
from webhook.cluster.watch import ListWatch
from webhook.kinds import PODGROUP, SCHEDULING

log = logging.getLogger("workload_webhook.bridge")
TIMEOUT = (5, 15)
SA_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
COMPONENT = "workload-webhook-bridge"     # the Events' reportingController
ACTION = "Reconcile"


def lease_namespace(configured: str, environ=os.environ, sa_file: str = SA_NAMESPACE) -> str:
    """The configured namespace, else the serving Pod's own, else default."""
    if configured:
        return configured
    if environ.get("POD_NAMESPACE"):
        return environ["POD_NAMESPACE"]
    try:
        with open(sa_file, encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


def _keep(obj: dict, spec: bool = True) -> dict:
    meta = obj.get("metadata") or {}
    out = {"metadata": {k: meta[k] for k in ("name", "namespace", "uid", "labels", "ownerReferences",
                                              "deletionTimestamp") if k in meta}}
    if spec:
        out["spec"] = obj.get("spec") or {}
    return out


def project_foreign(obj: dict) -> dict:
    return {**_keep(obj), "status": obj.get("status") or {}}


def project_mirror(obj: dict) -> dict:
    return {**_keep(obj), "status": {"conditions": (obj.get("status") or {}).get("conditions") or []}}


def project_pod(obj: dict) -> dict:
    spec = obj.get("spec") or {}
    return {**_keep(obj, spec=False), "spec": {k: spec[k] for k in ("schedulingGroup", "nodeName") if k in spec},
            "status": {"phase": (obj.get("status") or {}).get("phase")}}


def group_of_pod(pod: dict | None) -> tuple[str, str, str] | None:
    """(dialect, namespace, group) of a Pod the bridge joined."""
    meta = (pod or {}).get("metadata") or {}
    dialect = (meta.get("labels") or {}).get(BRIDGE_LABEL)
    group = ((pod or {}).get("spec") or {}).get("schedulingGroup") or {}
    if dialect in BY_NAME and group.get("podGroupName"):
        return dialect, meta.get("namespace") or "", group["podGroupName"]
    return None


class WorkQueue:
    """Keys to reconcile, each once however often it is added, and retries after a delay."""

    def __init__(self):
        self._ready: dict = {}
        self._later: list = []
        self._cond = threading.Condition()

    def add(self, key, after: float = 0.0) -> None:
        with self._cond:
            if after > 0:
                heapq.heappush(self._later, (time.monotonic() + after, key))
            else:
                self._ready[key] = None
            self._cond.notify()

    def get(self, timeout: float):
        with self._cond:
            deadline = time.monotonic() + timeout
            while True:
                now = time.monotonic()
                while self._later and self._later[0][0] <= now:
                    self._ready[heapq.heappop(self._later)[1]] = None
                if self._ready:
                    key = next(iter(self._ready))
                    del self._ready[key]
                    return key
                wait = deadline - now
                if self._later:
                    wait = min(wait, self._later[0][0] - now)
                if wait <= 0:
                    return None
                self._cond.wait(wait)

    def __len__(self) -> int:
        return len(self._ready) + len(self._later)


class Bridge:
    def __init__(self, api_client, bridge_settings, identity: str | None = None, environ=os.environ):
        self.api = Api.of(api_client, field_manager=BRIDGE) if api_client is not None else None   # its writes: managedFields
        self.settings = bridge_settings
        self.dialects: tuple[Dialect, ...] = enabled(bridge_settings)
        self.identity = identity or f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.lease = Lease(self.api, lease_namespace(bridge_settings.leaseNamespace, environ),
                           bridge_settings.leaseName, self.identity, bridge_settings.leaseDurationSeconds)
        self.queue = WorkQueue()
        self._said: set = set()
        self._failures: dict = {}
        self._version: str | None = None
        self.reconciled = 0
        self._reset()

    # -- state while leading ------------------------------------------------------------

    def _reset(self) -> None:
        self.foreign = {d.name: BridgeStore(project_foreign, self._foreign_changed(d)) for d in self.dialects}
        self.mirrors = BridgeStore(project_mirror, self._mirror_changed)
        self.members: dict[tuple[str, str], dict[str, dict]] = {}
        self.pods = BridgeStore(project_pod, self._pod_changed)

    def _foreign_changed(self, d: Dialect):
        def changed(old, new):
            meta = (new or old or {}).get("metadata") or {}
            self.queue.add((d.name, meta.get("namespace") or "", meta.get("name")))
        return changed

    def _mirror_changed(self, old, new) -> None:
        meta = (new or old or {}).get("metadata") or {}
        dialect = (meta.get("labels") or {}).get(BRIDGE_LABEL)
        if dialect in BY_NAME:
            self.queue.add((dialect, meta.get("namespace") or "", meta.get("name")))

    def _pod_changed(self, old, new) -> None:
        for pod, present in ((old, False), (new, True)):
            key = group_of_pod(pod)
            if key is None:
                continue
            name = pod["metadata"]["name"]
            group = self.members.setdefault(key[1:], {})
            if present:
                group[name] = pod
            else:
                group.pop(name, None)
                if not group:
                    self.members.pop(key[1:], None)
            self.queue.add(key)

    # -- reading and writing ------------------------------------------------------------

    def _request(self, method: str, path: str, body=None, content_type: str = "application/json"):
        return self.api.call(method, path, body=body, content_type=content_type, timeout=TIMEOUT)

    def _scheduling_version(self) -> str:
        if self._version is None:
            self._version = self.api.served_version(SCHEDULING, PODGROUP.plural, PODGROUP.versions, timeout=TIMEOUT)
            if self._version is None:
                raise RuntimeError("the cluster serves no scheduling.k8s.io PodGroups (v1beta1, v1alpha3)")
        return self._version

    def _mirror_path(self, namespace: str, name: str | None = None) -> str:
        return path(SCHEDULING, self._scheduling_version(), PODGROUP.plural, namespace, name)

    def _event(self, d: Dialect, foreign: dict, reason: str, message: str, warning: bool) -> None:
        meta = foreign.get("metadata") or {}
        memo = (meta.get("uid"), reason, message)
        if memo in self._said:
            return
        regarding = {"apiVersion": d.api_version, "kind": d.kind, "name": meta.get("name"),
                     "namespace": meta.get("namespace"), "uid": meta.get("uid")}
        event = events.regarding_event(regarding, reason, message, warning, ACTION, COMPONENT, self.identity,
                                       datetime.datetime.now(datetime.timezone.utc),
                                       f"{time.time_ns():x}{os.getpid() & 0xffff:04x}")
        try:
            events.write(self.api, event["metadata"]["namespace"], event, timeout=TIMEOUT[1])
        except Exception as exc:               # refused (RBAC, a terminating namespace) or no answer
            log.warning("bridge: event %s on %s %s/%s not recorded: %s", reason, d.title, meta.get("namespace"),
                        meta.get("name"), events.failure_reason(exc))
            return
        if len(self._said) > 10_000:
            self._said.clear()
        self._said.add(memo)

    def _apply(self, d: Dialect, foreign: dict, action: mirror_mod.Action) -> bool:
        """Do one action; False when the rest of the plan no longer holds (the mirror to
        create existed already: what was done instead is that object's plan)."""
        meta = foreign["metadata"]
        ns, name = meta.get("namespace"), meta.get("name")
        if action.verb == "event":
            self._event(d, foreign, action.reason, action.body, action.warning)
            return True
        if action.verb == "create":
            body = {**action.body, "apiVersion": f"{SCHEDULING}/{self._scheduling_version()}"}
            code, answer = self._request("POST", self._mirror_path(ns), body)
            if code == 409:                            # one the watch had not shown: what is it?
                code, existing = self._request("GET", self._mirror_path(ns, name))
                if code == 200:
                    for follow in mirror_mod.plan(mirror_mod.Group(d, foreign, project_mirror(existing)), None):
                        if not self._apply(d, foreign, follow):
                            break
                return False
            self._check(code, answer, f"create the in-tree PodGroup {ns}/{name}", d, foreign, "MirrorFailed")
            log.info("bridge: mirrored %s PodGroup %s/%s", d.title, ns, name)
        elif action.verb == "minCount":
            patch = {"spec": {"schedulingPolicy": {"gang": {"minCount": action.body}}}}
            code, answer = self._request("PATCH", self._mirror_path(ns, name), patch, "application/merge-patch+json")
            self._check(code, answer, f"set minCount {action.body} on {ns}/{name}", d, foreign, "MirrorFailed")
        elif action.verb == "delete":
            code, answer = self._request("DELETE", self._mirror_path(ns, name),
                                         {"preconditions": {"uid": action.reason}, "propagationPolicy": "Background"})
            if code not in (404, 409):
                self._check(code, answer, f"delete the stale mirror {ns}/{name}", d, foreign, "MirrorFailed")
        elif action.verb == "status":
            path = f"/apis/{d.group}/{d.version}/namespaces/{ns}/{d.plural}/{name}" + \
                   ("/status" if d.status_subresource else "")
            code, answer = self._request("PATCH", path, {"status": action.body}, "application/merge-patch+json")
            if code != 404:                            # deleted meanwhile: nothing to say
                self._check(code, answer, f"write the status of {d.title} PodGroup {ns}/{name}", d, foreign,
                            "StatusFailed")
        return True

    def _check(self, code: int, answer: dict, what: str, d: Dialect, foreign: dict, reason: str) -> None:
        if code in (200, 201, 202):
            return
        message = f"could not {what}: {code} {answer.get('message') or answer.get('reason') or ''}".strip()
        self._event(d, foreign, reason, message, True)
        raise RuntimeError(message)

    def reconcile(self, key: tuple[str, str, str]) -> None:
        d = BY_NAME[key[0]]
        store = self.foreign.get(d.name)
        if store is None:
            return
        foreign = store.objects.get(key[1:])
        mirror = self.mirrors.objects.get(key[1:])
        members = tuple(self.members.get(key[1:], {}).values())
        desired = status_mod.desired(d, foreign, mirror, members) if foreign else None
        for action in mirror_mod.plan(mirror_mod.Group(d, foreign, mirror, members), desired):
            if not self._apply(d, foreign, action):
                break
        self.reconciled += 1

    # -- running ------------------------------------------------------------------------

    def _watchers(self) -> list[ListWatch]:
        """One list-and-watch per store (webhook/cluster/watch.py): the foreign PodGroups of each
        dialect, the mirrors and the Pods it joined (both by the bridge's label)."""
        def watching(collection: str, store: BridgeStore, selector: str | None = None) -> ListWatch:
            return ListWatch(self.api, collection, store, selector=selector, name=f"bridge-watch{collection}",
                             logger=log, label=f"bridge {collection}")
        out = [watching(path(d.group, d.version, d.plural), self.foreign[d.name]) for d in self.dialects]
        out.append(watching(path(SCHEDULING, self._scheduling_version(), PODGROUP.plural), self.mirrors, BRIDGE_LABEL))
        out.append(watching(path("", "v1", "pods"), self.pods, BRIDGE_LABEL))
        return out

    def _work(self, lost: threading.Event) -> None:
        while not lost.is_set():
            if not self._synced():               # judged on a part of the truth, a status would be wrong
                lost.wait(0.2)
                continue
            key = self.queue.get(0.5)
            if key is None or lost.is_set():
                continue
            try:
                self.reconcile(key)
                self._failures.pop(key, None)
            except Exception as exc:           # retried with backoff; said once per failure streak
                tries = self._failures.get(key, 0) + 1
                self._failures[key] = tries
                if tries == 1:
                    log.warning("bridge: %s %s/%s: %s", key[0], key[1], key[2],
                                (str(exc).splitlines() or [""])[0][:300])
                self.queue.add(key, after=min(0.5 * 2 ** tries, 60.0))

    def _synced(self) -> bool:
        return all(s.synced for s in (*self.foreign.values(), self.mirrors, self.pods))

    def lead(self, stop: threading.Event) -> None:
        """While this replica holds the Lease: watch, reconcile, renew; return once it is lost."""
        period = max(1.0, self.settings.leaseDurationSeconds / 3)
        deadline = self.settings.leaseDurationSeconds * 2 / 3     # stop writing well before another may take it
        self._reset()
        lost = threading.Event()
        watchers = self._watchers()
        for w in watchers:
            w.start()
        worker = threading.Thread(target=self._work, args=(lost,), name="bridge-worker", daemon=True)
        worker.start()
        renewed = time.monotonic()
        resync_at = None
        try:
            while not stop.is_set():
                stop.wait(period)
                now = time.monotonic()
                if self.lease.try_hold():
                    renewed = now
                elif now - renewed > deadline:
                    log.warning("bridge: the Lease was not renewed for %.0f s: stopped writing", now - renewed)
                    return
                if self._synced() and (resync_at is None or now >= resync_at):
                    if resync_at is not None:
                        for d in self.dialects:
                            for ns, name in list(self.foreign[d.name].objects):
                                self.queue.add((d.name, ns, name))
                    resync_at = now + self.settings.resyncSeconds
        finally:
            lost.set()
            for w in watchers:
                w.stop()
            worker.join(5)

    def run(self, stop: threading.Event) -> None:
        log.info("bridge: %s on; candidate %s for Lease %s/%s", ", ".join(d.name for d in self.dialects),
                 self.identity, self.lease.namespace, self.lease.name)
        while not stop.is_set():
            try:
                if self.lease.try_hold():
                    self.lead(stop)
                    continue
            except Exception as exc:            # never let the master's thread die
                log.warning("bridge: %s", (str(exc).splitlines() or [type(exc).__name__])[0][:300])
            stop.wait(max(1.0, self.settings.leaseDurationSeconds / 3))
        self.lease.release()

