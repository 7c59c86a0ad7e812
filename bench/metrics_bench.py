"""Benchmark: what the admission path's metrics cost (issue 30), in one process.

The real `Admission.answer` (webhook/server/admit.py) on a Pod joining its
PodGroup (/mutate, the Pod burst's path) and on a denied TrainJob (/validate),
with prometheus_client in multiprocess mode as `serve` runs it, three ways in
interleaved rounds:

- shipped: the metrics as they are (children looked up once, in-flight, latency
  by outcome, violations by rule);
- before:  the metrics as they were (`labels()` per request for requests_total
  and a one-label histogram; no in-flight, no violations);
- none:    no metrics at all (the reference: what the rest of the path costs).

It prints microseconds per request (median of the rounds) and the metrics'
share of each. A benchmark, not a test: it asserts nothing.

    python bench/metrics_bench.py [--requests 20000] [--rounds 7]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="metrics-bench-"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from prometheus_client import Histogram  # noqa: E402

from webhook import config, metrics  # noqa: E402
from webhook.view import StaticView  # noqa: E402
from webhook.server.app import State, build_admission  # noqa: E402

OLD_LATENCY = Histogram("bench_request_duration_seconds", "the histogram as it was: one label", ["endpoint"],
                        buckets=metrics.LATENCY._upper_bounds[:-1])


class Before:
    """The recording as it was before issue 30."""

    def __init__(self) -> None:
        self.in_flight = {e: _Nothing() for e in metrics.ENDPOINTS}

    def answered(self, endpoint, kind, operation, outcome, elapsed, verdict) -> None:
        metrics.REQUESTS.labels(endpoint, kind, operation, outcome).inc()
        OLD_LATENCY.labels(endpoint).observe(elapsed)

    def observe(self, endpoint, outcome, elapsed) -> None:
        OLD_LATENCY.labels(endpoint).observe(elapsed)

    def looked_up(self, resource, source) -> None:
        metrics.LOOKUPS.labels(resource, source).inc()


class _Nothing:
    def inc(self, *a) -> None:
        pass

    dec = inc


class Nothing(Before):
    def answered(self, *a) -> None:
        pass

    observe = looked_up = answered


def review(obj: dict, operation: str = "CREATE") -> bytes:
    group, _, version = obj["apiVersion"].rpartition("/")
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u", "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "resource": {"group": group, "version": version, "resource": obj["kind"].lower() + "s"},
        "operation": operation, "namespace": "ml", "name": obj["metadata"]["name"], "object": obj,
        "userInfo": {"username": "system:serviceaccount:ml:job-controller"}}}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000, help="requests per round and variant")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cfg = config.load(os.path.join(ROOT, "examples", "config.yaml"))
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "train", "namespace": "ml"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"single": {}}}}
    admission = build_admission(State(cfg, StaticView([group], authoritative=True)))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-0", "namespace": "ml",
                                                          "labels": {cfg.groupLabel: "train"}},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    bad = {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "metadata": {"name": "tj", "namespace": "ml"},
           "spec": {"replicas": 4, "scheduling": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}}
    cases = {"Pod join (/mutate)": (admission.route(b"POST", "/mutate"), review(pod)),
             "denied TrainJob (/validate)": (admission.route(b"POST", "/validate"), review(bad))}
    variants = {"shipped": admission.metrics, "before": Before(), "none": Nothing()}
    print(f"prometheus_client multiprocess files in {os.environ['PROMETHEUS_MULTIPROC_DIR']}; "
          f"{args.rounds} rounds x {args.requests:,} requests, median us/request")
    print(f"{'case':<30} {'shipped':>9} {'before':>9} {'none':>9} {'metrics now':>12} {'metrics before':>15}")
    for name, (route, body) in cases.items():
        assert admission.answer(route, body, "application/json")[0] == 200
        times: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(args.rounds):
            for variant, recorder in variants.items():
                admission.metrics = recorder
                started = time.perf_counter()
                for _ in range(args.requests):
                    admission.answer(route, body, "application/json")
                times[variant].append((time.perf_counter() - started) / args.requests * 1e6)
        admission.metrics = variants["shipped"]
        us = {v: statistics.median(t) for v, t in times.items()}
        share = lambda v: (us[v] - us["none"]) / us[v] * 100     # noqa: E731
        print(f"{name:<30} {us['shipped']:>9.1f} {us['before']:>9.1f} {us['none']:>9.1f} "
              f"{share('shipped'):>11.1f}% {share('before'):>14.1f}%")


if __name__ == "__main__":
    main()
