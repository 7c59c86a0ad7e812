"""Load benchmark: the real server (gunicorn over TLS) under keep-alive HTTPS
at fixed concurrency. Prints requests/s and p50/p99 latency for validate and
mutate, next to GET /healthz on the same connections as the in-run reference.
Bounded: each row stops after --requests or --seconds, whichever comes first.

    python bench/load_bench.py [--concurrency 8] [--requests 4000] [--seconds 20] [--workers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.server.harness import REPO, Server, admission_request  # noqa: E402
from tests.unit.helpers import pod, trainjob  # noqa: E402


def run(server: Server, method: str, path: str, body: bytes | None, concurrency: int, total: int, seconds: float):
    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()
    left = [total]
    deadline = time.monotonic() + seconds
    headers = {"Content-Type": "application/json"} if body else {}

    def client():
        conn = server.connection(timeout=10)
        mine = []
        while time.monotonic() < deadline:
            with lock:
                if left[0] <= 0:
                    break
                left[0] -= 1
            t = time.perf_counter()
            try:
                status, _, _ = server.request(method, path, body, headers, conn=conn)
                ok = status == 200
            except OSError:
                ok = False
                conn.close()
                conn = server.connection(timeout=10)
            mine.append(time.perf_counter() - t)
            if not ok:
                with lock:
                    failures[0] += 1
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    latencies.sort()
    q = statistics.quantiles(latencies, n=100) if len(latencies) >= 2 else [0] * 99
    return len(latencies) / elapsed, q[49] * 1000, q[98] * 1000, failures[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    review = lambda obj: json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                     "request": admission_request(obj)}).encode()
    rows = [
        ("GET /healthz (reference)", "GET", "/healthz", None),
        ("POST /validate TrainJob", "POST", "/validate",
         review(trainjob({"schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"all": {}}}, replicas=8))),
        ("POST /mutate Pod (group label)", "POST", "/mutate", review(pod({"scheduling.k8s.io/pod-group": "pg"}))),
    ]
    with tempfile.TemporaryDirectory() as d, Server(d, config=f"{REPO}/examples/config.yaml", workers=args.workers,
                                                     extra=["--cluster", "disabled", "--log-level", "warning"]) as server:
        print(f"workers={args.workers} (gthread, 4 threads) concurrency={args.concurrency} keep-alive HTTPS")
        print(f"{'request':<34} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'failed':>7} {'x healthz':>10}")
        reference = None
        for label, method, path, body in rows:
            rps, p50, p99, failed = run(server, method, path, body, args.concurrency, args.requests, args.seconds)
            reference = reference or rps
            print(f"{label:<34} {rps:>9,.0f} {p50:>8.2f} {p99:>8.2f} {failed:>7} {reference / rps:>10.2f}")


if __name__ == "__main__":
    main()
