"""Benchmark: how many objects per second the rule engine judges.

Runs validate (and mutate for Pods / targets) over the bundled examples and
prints objects/s and microseconds per object, next to a reference measured in
the same process (copy.deepcopy of the same object), so figures from different
machines compare as ratios. A benchmark, not a test: it asserts nothing.

    python bench/engine_bench.py [--seconds 1.0]
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from webhook import config, engine, manifests  # noqa: E402
from webhook.view import StaticView  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rate(fn, seconds: float) -> float:
    """Calls per second of fn, measured for about `seconds` after a warm-up."""
    for _ in range(50):
        fn()
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(100):
            fn()
        n += 100
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="measuring time per row")
    args = parser.parse_args()
    cfg = config.load(os.path.join(ROOT, "examples", "config.yaml"))
    docs, _ = manifests.load([os.path.join(ROOT, "examples", d) for d in ("valid", "invalid", "pods")])
    view = StaticView([d.obj for d in docs], authoritative=True)
    print(f"{'object':<46} {'op':<8} {'objects/s':>11} {'us/object':>10} {'x deepcopy':>11}")
    for doc in docs:
        obj = doc.obj
        req = engine.Request.for_object(obj)
        reference = rate(lambda: copy.deepcopy(obj), args.seconds)
        label = f"{obj['kind']} {obj['metadata']['name']}"[:46]
        for op, fn in (("validate", lambda: engine.validate(req, cfg, view)),
                       ("mutate", lambda: engine.mutate(req, cfg, view))):
            if op == "mutate" and obj["kind"] not in ("Pod", "TrainJob", "GroupJob"):
                continue
            r = rate(fn, args.seconds)
            print(f"{label:<46} {op:<8} {r:>11,.0f} {1e6 / r:>10.1f} {reference / r:>11.1f}")


if __name__ == "__main__":
    main()
