"""Audit throughput on a real control plane (kube-apiserver + etcd from
hack/build-control-plane.sh): N AuditJobs (10 % violating) in 10 namespaces,
then `workload-webhook audit --report` as a subprocess, timed, with its peak
memory (its own, tests/memory.py). Prints objects/s and peak MiB per page size.

    python bench/audit_bench.py                 # 20,000 objects
    python bench/audit_bench.py --objects 2000  # quicker
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import yaml  # noqa: E402

from tests import memory  # noqa: E402
from tests.e2e.adopters import trainjob_crd_copy  # noqa: E402
from tests.e2e.controlplane import ControlPlane  # noqa: E402
from tests.server.harness import REPO  # noqa: E402

GROUP, PLURAL = "audit.example.com", "auditjobs"
TARGET = {"group": GROUP, "kind": "AuditJob", "versions": ["v1"], "groups": [{"at": "spec.scheduling", "size": "spec.replicas"}]}
REPORTS = os.path.normpath(os.path.join(REPO, "..", "shared", "reports"))


def kubectl(cp, *args, stdin=None):
    return subprocess.run([cp.kubectl, "--kubeconfig", cp.kubeconfig("admin"), *args], input=stdin, text=True,
                          capture_output=True, check=True, timeout=900).stdout


def setup(cp, n: int) -> None:
    kubectl(cp, "apply", "-f", "-", stdin=trainjob_crd_copy(GROUP, "AuditJob", PLURAL))
    for f in sorted(f for f in os.listdir(REPORTS) if f.endswith(".yaml")):
        kubectl(cp, "apply", "--server-side", "-f", os.path.join(REPORTS, f))
    for i in range(10):
        kubectl(cp, "create", "namespace", f"bench-{i}")
    time.sleep(3)
    bad = {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}
    good = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    started = time.monotonic()
    for start in range(0, n, 1000):
        items = [{"apiVersion": f"{GROUP}/v1", "kind": "AuditJob",
                  "metadata": {"name": f"job-{i}", "namespace": f"bench-{i % 10}"},
                  "spec": {"replicas": 4, "scheduling": bad if i % 10 == 0 else good}} for i in range(start, min(n, start + 1000))]
        kubectl(cp, "create", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    print(f"created {n} objects in {time.monotonic() - started:.0f} s", file=sys.stderr)


def audit(cp, work: str, page_size: int) -> tuple[float, float, dict]:
    config = os.path.join(work, "audit.yaml")
    with open(config, "w") as f:
        yaml.safe_dump({"targets": [TARGET]}, f)
    started = time.monotonic()
    proc, peak_mib = memory.peak([sys.executable, "-m", "webhook", "audit", "--config", config, "--kubeconfig",
                                  cp.kubeconfig("admin"), "--report", "--page-size", str(page_size), "-o", "json"],
                                 timeout=3600, cwd=REPO)
    seconds = time.monotonic() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"audit failed: {proc.stderr[-2000:]}")
    return seconds, peak_mib, json.loads(proc.stdout) if proc.stdout.startswith("{") else {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=20000)
    ap.add_argument("--page-sizes", default="100,500,2000")
    args = ap.parse_args()
    bin_dir = subprocess.run([os.path.join(REPO, "hack", "build-control-plane.sh")], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
    with tempfile.TemporaryDirectory() as work, ControlPlane(bin_dir, os.path.join(work, "cp")) as cp:
        setup(cp, args.objects)
        print(f"audit of {args.objects} objects (10 % violating) through kube-apiserver, reports written")
        print(f"{'page size':>9} {'seconds':>8} {'objects/s':>10} {'peak MiB':>9} {'violations':>10}")
        for page in (int(p) for p in args.page_sizes.split(",")):
            seconds, peak, out = audit(cp, work, page)
            found = sum(s["violations"] for s in out.get("summary", []))
            print(f"{page:>9} {seconds:>8.1f} {args.objects / seconds:>10.0f} {peak:>9.0f} {found:>10}")


if __name__ == "__main__":
    main()
