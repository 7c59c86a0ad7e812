"""A job controller's Pod burst, through the real kube-apiserver: N Pods that
carry the pod-group label, created by C keep-alive HTTPS clients (the admin
certificate) at once. Shared by the e2e correctness test (failed creates: a
count) and bench/burst_bench.py (Pods/s and latencies)."""
from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlparse

LABEL = "scheduling.k8s.io/pod-group"


@dataclass
class BurstResult:
    count: int
    concurrency: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def created(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.created / self.seconds if self.seconds else 0.0

    def quantile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def burst_pod(name: str, group: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {LABEL: group, "app": "burst"}},
            "spec": {"containers": [{"name": "trainer", "image": "registry.example/trainer:1",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}


def run(cluster, namespace: str, group: str, count: int, concurrency: int, prefix: str = "p",
        max_seconds: float = 300) -> BurstResult:
    """Create `count` Pods with `concurrency` clients; stops by itself after `max_seconds`."""
    url = urlparse(cluster.url)
    ctx = cluster.ssl_context("admin")
    path = f"/api/v1/namespaces/{namespace}/pods"
    next_index = iter(range(count))
    lock = threading.Lock()
    result = BurstResult(count, concurrency, 0.0)
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=60)
        while time.monotonic() < deadline:
            with lock:
                i = next(next_index, None)
            if i is None:
                break
            body = json.dumps(burst_pod(f"{prefix}-{i}", group)).encode()
            started = time.perf_counter()
            try:
                conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                elapsed = time.perf_counter() - started
                with lock:
                    if resp.status == 201:
                        result.latencies.append(elapsed)
                    else:
                        result.failures.append(f"{resp.status}: {_message(data)}")
            except (OSError, http.client.HTTPException) as exc:
                with lock:
                    result.failures.append(repr(exc))
                conn.close()
                conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=60)
        conn.close()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max_seconds + 60)
    result.seconds = time.perf_counter() - started
    return result


def delete_pods(cluster, namespace: str) -> None:
    """Unbound Pods are deleted at once (no kubelet needed)."""
    url = urlparse(cluster.url)
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=cluster.ssl_context("admin"), timeout=120)
    try:
        conn.request("DELETE", f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3Dburst")
        conn.getresponse().read()
    finally:
        conn.close()


def _message(data: bytes) -> str:
    try:
        return json.loads(data).get("message", "")[:300]
    except ValueError:
        return data[:300].decode("utf-8", "replace")
