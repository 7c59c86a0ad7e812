"""Benchmark: what building costs next to validating (webhook.builder, issue 35).

One composite target object with 8 child groups (a GroupJob of examples/config.yaml:
8 replicated jobs, each with a gang policy, a topology constraint, a disruption mode
and a claim) compiles into a Workload with 8 PodGroupTemplates. Measured in the same
process, in µs per object:

- validate the target object (engine.validate, as the webhook admits it);
- validate the Workload it compiles to (engine.validate of the Workload object);
- Builder.validate of the tree (the engine's block rules per item);
- build: the tree from the object (webhook.builder.targets) and build_workload;
- render: build plus the CompositePodGroup and the 8 PodGroups.

The ratio column divides by validating the target object: build must be <= 1.
A benchmark, not a test: it asserts nothing.

    python bench/builder_bench.py [--seconds 2.0] [--children 8]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from webhook import config, engine  # noqa: E402
from webhook.builder import ALL_MODES, ALL_POLICIES, Builder, BuildOptions  # noqa: E402
from webhook.builder.targets import owner_of, render, trees  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rates(fns: list, seconds: float, rounds: int = 7) -> list[float]:
    """Calls per second of each fn: rounds that take turns between the rows (so a busy moment of
    a shared machine slows every row alike), each row's best round kept, after a warm-up."""
    for fn in fns:
        for _ in range(20):
            fn()
    best = [0.0] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            n, start = 0, time.perf_counter()
            while True:
                for _ in range(10):
                    fn()
                n += 10
                elapsed = time.perf_counter() - start
                if elapsed >= seconds / rounds:
                    best[i] = max(best[i], n / elapsed)
                    break
    return best


def group_job(children: int) -> dict:
    jobs = [{"name": f"job-{i}", "replicas": 4, "scheduling": {
        "schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"all": {}}}} for i in range(children)]
    return {"apiVersion": "jobs.example.com/v1", "kind": "GroupJob",
            "metadata": {"name": "pipeline", "namespace": "ml", "uid": "5f1d8a52-8f3e-4f7e-9a39-0c7f7b1f0f11"},
            "spec": {"scheduling": {"schedulingPolicy": {"gang": {"minGroupCount": children}},
                                    "disruptionMode": {"all": {}}}, "replicatedJobs": jobs}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per row")
    parser.add_argument("--children", type=int, default=8, help="child groups (PodGroupTemplates)")
    args = parser.parse_args()
    cfg = config.load(os.path.join(ROOT, "examples", "config.yaml"))
    obj = group_job(args.children)
    req = engine.Request.for_object(obj)
    assert engine.validate(req, cfg).allowed, engine.validate(req, cfg).errors
    (root,) = trees(obj, cfg)
    opts = BuildOptions(name="pipeline-wl", namespace="ml", owner=owner_of(obj), allowed_policies=ALL_POLICIES,
                        allowed_disruption_modes=ALL_MODES)
    workload = Builder(root, opts).build_workload()
    assert len(workload["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"]) == args.children
    wl_req = engine.Request.for_object(workload)
    assert engine.validate(wl_req, cfg).allowed, engine.validate(wl_req, cfg).errors

    def build() -> None:
        (tree,) = trees(obj, cfg)
        Builder(tree, opts).build_workload()

    rows = [("validate the target object (engine)", lambda: engine.validate(req, cfg)),
            ("validate the Workload (engine)", lambda: engine.validate(wl_req, cfg)),
            ("Builder.validate of the tree", lambda: Builder(root, opts).validate()),
            ("build: tree + build_workload", build),
            (f"render: build + 1 CompositePodGroup + {args.children} PodGroups", lambda: render(obj, cfg))]
    measured = rates([fn for _, fn in rows], args.seconds)
    print(f"{args.children} PodGroupTemplates under one composite")
    print(f"{'':<54} {'objects/s':>10} {'us/object':>10} {'x validate':>11}")
    for (label, _), r in zip(rows, measured):
        print(f"{label:<54} {r:>10,.0f} {1e6 / r:>10.1f} {measured[0] / r:>11.2f}")


if __name__ == "__main__":
    main()
