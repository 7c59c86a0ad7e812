"""When each step of a job happened, as the API server told it: watches on one
namespace's Workloads, PodGroups, Pods and ResourceClaims (JSON lines over
HTTPS, admin certificate, loopback), each event stamped with the test's
monotonic clock. creationTimestamp has one-second resolution; these have
milliseconds. The last object seen of each kind is kept for the assertions."""
from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from urllib.parse import urlparse

PATHS = {
    "workloads": "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/workloads",
    "podgroups": "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups",
    "pods": "/api/v1/namespaces/{ns}/pods",
    "resourceclaims": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
}
STEPS = ("created", "Workload", "PodGroup", "group claim", "Pods", "claim allocated", "first bound", "bound")


def _owner_kind(obj: dict) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("kind")
    return None


class Timeline:
    """Start before the scenario creates anything in `namespace`; `mark("created")`
    when it creates its first object; `stop()` at the end."""

    def __init__(self, cluster, namespace: str, pods: int):
        url = urlparse(cluster.url)
        self.host, self.port, self.ctx = url.hostname, url.port, cluster.ssl_context("admin")
        self.namespace, self.expected_pods = namespace, pods
        self.t0: float | None = None
        self.at: dict[str, float] = {}
        self.objects: dict[str, dict[str, dict]] = {k: {} for k in PATHS}
        self._lock = threading.Lock()
        self._conns: list[http.client.HTTPSConnection] = []
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()

    # -- lifecycle -------------------------------------------------------------------

    def start(self, timeout: float = 15) -> "Timeline":
        ready = []
        for resource in PATHS:
            event = threading.Event()
            ready.append(event)
            t = threading.Thread(target=self._watch, args=(resource, event), daemon=True, name=f"watch-{resource}")
            t.start()
            self._threads.append(t)
        deadline = time.monotonic() + timeout
        for event in ready:
            if not event.wait(max(0.0, deadline - time.monotonic())):
                self.stop()
                raise AssertionError(f"the watches on {self.namespace} did not start within {timeout:.0f} s")
        return self

    def stop(self) -> None:
        self._stopped.set()
        for conn in list(self._conns):
            try:
                if conn.sock is not None:
                    conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        for t in self._threads:
            t.join(5)

    def _watch(self, resource: str, ready: threading.Event) -> None:
        path = PATHS[resource].format(ns=self.namespace) + "?watch=1&timeoutSeconds=600"
        while not self._stopped.is_set():
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)
            self._conns.append(conn)
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                if resp.status != 200:
                    raise OSError(f"watch {resource}: HTTP {resp.status}")
                conn.sock.settimeout(None)       # events may be minutes apart; stop() shuts the socket
                ready.set()
                while not self._stopped.is_set():
                    line = resp.readline()
                    if not line:
                        break
                    event = json.loads(line)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._seen(resource, event["object"], time.monotonic())
                    elif event.get("type") == "DELETED":
                        with self._lock:
                            self.objects[resource].pop(event["object"]["metadata"]["name"], None)
            except (OSError, ValueError, AttributeError, http.client.HTTPException):   # AttributeError: closed by stop()
                if self._stopped.is_set():
                    return
                time.sleep(0.2)
            finally:
                conn.close()

    # -- milestones ------------------------------------------------------------------

    def mark(self, step: str, when: float | None = None) -> None:
        with self._lock:
            now = time.monotonic() if when is None else when
            if step == "created" and self.t0 is None:
                self.t0 = now
            self.at.setdefault(step, now)

    def _seen(self, resource: str, obj: dict, now: float) -> None:
        with self._lock:
            self.objects[resource][obj["metadata"]["name"]] = obj
            pods = list(self.objects["pods"].values())
            claims = list(self.objects["resourceclaims"].values())
        if resource == "workloads":
            self.mark("Workload", now)
        elif resource == "podgroups":
            self.mark("PodGroup", now)
        elif resource == "pods":
            if len(pods) >= self.expected_pods:
                self.mark("Pods", now)
            bound = [p for p in pods if p["spec"].get("nodeName")]
            if bound:
                self.mark("first bound", now)
            if len(bound) >= self.expected_pods:
                self.mark("bound", now)
        elif resource == "resourceclaims":
            group = [c for c in claims if _owner_kind(c) == "PodGroup"]
            if group:
                self.mark("group claim", now)
            if any((c.get("status") or {}).get("allocation") for c in group):
                self.mark("claim allocated", now)
            if any((c.get("status") or {}).get("allocation") for c in claims if _owner_kind(c) == "Pod"):
                self.mark("pod claim allocated", now)

    # -- reading -----------------------------------------------------------------------

    def seconds(self, step: str) -> float | None:
        if self.t0 is None or step not in self.at:
            return None
        return self.at[step] - self.t0

    def line(self, steps=STEPS) -> str:
        """`created 0.00 → Workload +0.05 → ... → bound +2.61 s` (— for a step that never came)."""
        parts = []
        for step in steps:
            s = self.seconds(step)
            if step == "created":
                parts.append("created 0.00")
            else:
                parts.append(f"{step} " + ("—" if s is None else f"+{s:.2f}"))
        return " → ".join(parts) + " s"
