"""One writer across the serving replicas: a coordination.k8s.io/v1 Lease, held the
way client-go's leader election holds one (a holder renews it; another takes it only
after it has seen the same record unchanged for a whole leaseDurationSeconds, measured
on its own clock, so clocks need not agree).

The kubernetes client's own leaderelection package builds its lock on the default
client configuration, has no request timeouts and exits the process on bad settings;
this one is ~100 lines on the API layer the bridge already has (webhook/cluster/api.py).
`decide` is pure."""
from __future__ import annotations

import datetime
import logging
import time
from dataclasses import dataclass
from urllib.parse import quote

from webhook.cluster.api import BRIDGE, Api

log = logging.getLogger("workload_webhook.bridge")
TIMEOUT = (5, 10)
#: what try_hold() does about the Lease it read
CREATE, RENEW, TAKE, WAIT = "create", "renew", "take", "wait"


def now_micro() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def decide(spec: dict | None, identity: str, unchanged_for: float, duration: float) -> str:
    """`spec`: the Lease's spec (None: no Lease); `unchanged_for`: seconds this candidate has
    seen the same holder and renewTime."""
    if spec is None:
        return CREATE
    holder = spec.get("holderIdentity")
    if holder == identity:
        return RENEW
    if not holder or unchanged_for >= float(spec.get("leaseDurationSeconds") or duration):
        return TAKE
    return WAIT


@dataclass
class _Seen:
    record: tuple
    since: float


class Lease:
    def __init__(self, api_client, namespace: str, name: str, identity: str, duration: int = 15,
                 clock=time.monotonic):
        self.api = Api.of(api_client, field_manager=BRIDGE)              # the bridge writes its Lease
        self.namespace, self.name, self.identity = namespace, name, identity
        self.duration, self.clock = duration, clock
        self._seen: _Seen | None = None
        self.held_since: float | None = None

    def _path(self, name: str | None = None) -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{quote(self.namespace, safe='')}/leases"
        return f"{base}/{quote(name, safe='')}" if name else base

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        """The answer's object; ApiException when it is not a success (404 and 409 included)."""
        return self.api.expect(method, path, body, timeout=TIMEOUT)

    def _read(self) -> dict:
        return self._call("GET", self._path(self.name))

    def try_hold(self) -> bool:
        """One attempt to acquire or renew; True while this candidate holds the Lease.
        Any API error counts as not holding (the caller stops writing)."""
        from kubernetes.client.rest import ApiException
        try:
            try:
                lease = self._read()
            except ApiException as exc:
                if exc.status != 404:
                    raise
                lease = None
            spec = (lease or {}).get("spec") or {} if lease is not None else None
            record = (spec.get("holderIdentity"), spec.get("renewTime")) if spec is not None else None
            now = self.clock()
            if self._seen is None or self._seen.record != record:
                self._seen = _Seen(record, now)
            action = decide(spec, self.identity, now - self._seen.since, self.duration)
            if action == WAIT:
                self.held_since = None
                return False
            stamp = now_micro()
            mine = {"holderIdentity": self.identity, "leaseDurationSeconds": self.duration, "renewTime": stamp}
            if action == CREATE:
                self._call("POST", self._path(), {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                                  "metadata": {"name": self.name},
                                                  "spec": {**mine, "acquireTime": stamp}})
            else:
                taken = action == TAKE
                body = {**lease, "spec": {**spec, **mine, **({"acquireTime": stamp} if taken else {}),
                                          "leaseTransitions": int(spec.get("leaseTransitions") or 0) + int(taken)}}
                self._call("PUT", self._path(self.name), body)
            if self.held_since is None:
                log.info("bridge: this replica (%s) holds Lease %s/%s", self.identity, self.namespace, self.name)
                self.held_since = now
            self._seen = _Seen((self.identity, stamp), now)
            return True
        except ApiException as exc:
            if exc.status != 409:         # 409: another replica wrote first; try again next period
                log.warning("bridge: Lease %s/%s: %s %s", self.namespace, self.name, exc.status, exc.reason)
        except Exception as exc:          # unreachable, timed out
            log.warning("bridge: Lease %s/%s: %s", self.namespace, self.name, type(exc).__name__)
        self.held_since = None
        return False

    def holder(self) -> str | None:
        """Who holds the Lease now, read, never written (None: nobody, or no answer): how a second
        loop of this process (the live gang model, webhook/gangs/model.py) follows this one."""
        try:
            return ((self._read().get("spec") or {}).get("holderIdentity")) or None
        except Exception:                 # noqa: BLE001 - no Lease, refused, unreachable: not ours
            return None

    def release(self) -> None:
        """Give the Lease up (a stopping replica), so another takes it at once."""
        from kubernetes.client.rest import ApiException
        if self.held_since is None:
            return
        try:
            lease = self._read()
            if ((lease.get("spec") or {}).get("holderIdentity")) == self.identity:
                lease["spec"] = {**lease["spec"], "holderIdentity": None, "leaseDurationSeconds": 1}
                self._call("PUT", self._path(self.name), lease)
        except (ApiException, Exception):
            pass
        self.held_since = None
