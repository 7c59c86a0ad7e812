"""Scale benchmark: the real `workload-webhook serve` (default settings, N workers)
against a real kube-apiserver + etcd holding 0, 10,000, 50,000 and 100,000 jobs
(one Workload and one PodGroup each, with a DRA claim, over 100 namespaces).
For each size it prints the time from launching `serve` until every worker's
cache has synced, the RSS (and PSS) of the master, of each worker and in total,
and the latency of Pods joining a group (AdmissionReviews POSTed to /mutate over
TLS by bench/go/loadgen, a bounded count) and of PodGroup creates (PG-2: the
Workload by GET). Then the fit total RSS = base + per-group cost x groups, and
the memory limit it gives at 100,000 groups; --json writes everything.

    python bench/scale_bench.py [--sizes 0,10000,50000,100000] [--requests 4000] [--concurrency 8]
                                [--workers 2] [--json FILE]

Jobs are written into etcd in transactions, as byte copies of a job kube-apiserver
created and stored itself (tests/e2e/scale.py: 100,000 jobs in about 30 s).
Everything binds to 127.0.0.1 and stops by itself (every wait is bounded).
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests import memory  # noqa: E402
from tests.e2e import scale  # noqa: E402
from tests.e2e.controlplane import ControlPlane  # noqa: E402
from tests.server.harness import REPO, Server, admission_request  # noqa: E402

LIMIT_AT = 100_000         # groups the chart's default memory limit is sized for


def review_file(work: str, name: str, obj: dict, namespace: str) -> str:
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                   "request": admission_request(obj, namespace=namespace)}, f)
    return path


def load(loadgen: str, server: Server, body: str, path: str, requests: int, concurrency: int) -> dict:
    args = [loadgen, "-url", f"https://127.0.0.1:{server.port}{path}", "-ca",
            os.path.join(server.cert_dir, "ca.crt"), "-body", body, "-concurrency", str(concurrency),
            "-requests", str(requests), "-duration", "120s", "-warmup", "1s"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"loadgen failed: {out.stderr}")
    return json.loads(out.stdout)


def joined(server: Server, body: str) -> bool:
    """The Pod got the group's claim from the cache (not only its membership)."""
    with open(body) as f:
        status, answer = server.review("/mutate", json.load(f)["request"])
    patch = json.loads(base64.b64decode(answer["response"].get("patch") or "W10="))
    return status == 200 and any(op["path"] == "/spec/resourceClaims" for op in patch)


def measure(cp, work: str, size: int, workers: int, loadgen: str, requests: int, concurrency: int) -> dict:
    hook = os.path.join(work, f"serve-{size}")
    os.makedirs(hook)
    server = Server(hook, workers=workers, extra=["--cluster", "kubeconfig", "--kubeconfig", cp.kubeconfig("admin")])
    launched = time.monotonic()
    server.start(timeout=120)
    try:
        healthy = time.monotonic() - launched
        waited, lines = scale.wait_synced(server.log_path, 0, workers, timeout=600)
        sync_s = None if waited is None else round(healthy + waited, 2)
        time.sleep(1.0)
        row = {"jobs": size, "sync_s": sync_s, "list_s": _list_seconds(server.log_path),
               "memory_synced": memory.serve_memory(server.proc.pid)}
        if size:
            i = size // 2                    # a job in the middle
            ns, group = scale.namespace(i), scale.podgroup(i)
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"{scale.job(i)}-w-0", "namespace": ns,
                                "labels": {"scheduling.k8s.io/pod-group": group["metadata"]["name"]}},
                   "spec": {"containers": [{"name": "trainer", "image": "registry.example/trainer:1"}]}}
            body = review_file(work, f"pod-{size}", pod, ns)
            row["pod_joined_from_cache"] = joined(server, body)
            row["pod_join"] = load(loadgen, server, body, "/mutate", requests, concurrency)
            group["metadata"]["name"] = f"{scale.job(i)}-extra"       # a new group of an existing Workload
            body = review_file(work, f"podgroup-{size}", group, ns)
            row["podgroup_create"] = load(loadgen, server, body, "/validate", max(requests // 4, 100), concurrency)
        row["memory_loaded"] = memory.serve_memory(server.proc.pid)
        return row
    finally:
        server.stop()


def _list_seconds(log_path: str) -> float | None:
    """How long the master's one LIST took (webhook/cluster/snapshot.py), from its log line."""
    with open(log_path, "rb") as f:
        for raw in f:
            try:
                msg = json.loads(raw).get("msg", "")
            except (ValueError, AttributeError):
                continue
            if msg.startswith("podgroups listed for the workers in "):
                return float(msg.split(" in ")[1].split(" s")[0])
    return None


def fit(rows: list[dict], key: str) -> tuple[float, float]:
    """Least squares: total MiB = base + per_group x jobs."""
    xs = [r["jobs"] for r in rows]
    ys = [r["memory_loaded"][key] for r in rows]
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0
    return my - slope * mx, slope


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="0,10000,50000,100000")
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    bin_dir = subprocess.run([os.path.join(REPO, "hack", "build-control-plane.sh")], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
    loadgen = scale.build_go("loadgen")
    rows, made = [], []
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as work:
        with ControlPlane(bin_dir, os.path.join(work, "cp")) as cp:
            scale.create_namespaces(cp)
            have = 0
            for size in sizes:
                if size > have:
                    started = time.monotonic()
                    made.append(scale.clone_jobs(cp, have, size))
                    for plural in ("workloads", "podgroups"):
                        scale.wait_listed(cp, plural, size, timeout=600)
                    made[-1]["listed_after_s"] = round(time.monotonic() - started, 1)
                    print(json.dumps({"created": made[-1], "jobs": size}), file=sys.stderr)
                    have = size
                row = measure(cp, work, size, args.workers, loadgen, args.requests, args.concurrency)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    base, slope = fit(rows, "rss_mib") if len(rows) > 1 else (rows[0]["memory_loaded"]["rss_mib"], 0.0)
    pss_base, pss_slope = fit(rows, "pss_mib") if len(rows) > 1 else (rows[0]["memory_loaded"]["pss_mib"], 0.0)
    print(f"{'jobs':>7} {'sync s':>7} {'LIST s':>7} {'master':>7} {'workers MiB':>15} {'total RSS':>9} "
          f"{'PSS':>6} {'join p50':>8} {'join p99':>8} {'join/s':>7} {'PG p50':>7} {'PG p99':>7}  per worker")
    for r in rows:
        m = r["memory_loaded"]
        workers = "/".join(f"{w['rss'] / 1024:.0f}" for w in m["workers"])
        join, pg = r.get("pod_join") or {}, r.get("podgroup_create") or {}
        per = ""
        if r["jobs"]:
            zero = rows[0]["memory_loaded"] if rows[0]["jobs"] == 0 else None
            if zero:
                per = " ".join(f"{(w['rss'] - z['rss']) * 1024 / r['jobs']:.0f} B/group"
                               for w, z in zip(m["workers"], zero["workers"]))
        print(f"{r['jobs']:>7} {r['sync_s'] or '-':>7} {r['list_s'] or '-':>7} "
              f"{m['master']['rss'] / 1024:>7.0f} {workers:>15} {m['rss_mib']:>9.0f} {m['pss_mib']:>6.0f} "
              f"{join.get('p50_ms', '-'):>8} {join.get('p99_ms', '-'):>8} {join.get('rps', 0):>7.0f} "
              f"{pg.get('p50_ms', '-'):>7} {pg.get('p99_ms', '-'):>7}  {per}")
    at = base + slope * LIMIT_AT
    print(f"total RSS ~ {base:.0f} MiB + {slope * 1024 * 1024:.0f} B x groups "
          f"(PSS ~ {pss_base:.0f} MiB + {pss_slope * 1024 * 1024:.0f} B x groups); "
          f"at {LIMIT_AT:,} groups: {at:.0f} MiB")
    errors = sum((r.get("pod_join") or {}).get("errors", 0) + (r.get("podgroup_create") or {}).get("errors", 0)
                 for r in rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"created": made, "rows": rows, "fit": {"base_mib": base, "per_group_bytes": slope * 1024 * 1024,
                                                              "pss_base_mib": pss_base,
                                                              "pss_per_group_bytes": pss_slope * 1024 * 1024}},
                      f, indent=2)
    return 1 if errors or any(r["sync_s"] is None for r in rows) or \
        any(r.get("pod_joined_from_cache") is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
