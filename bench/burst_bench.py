"""Pod-burst benchmark through the real kube-apiserver + etcd (the e2e control
plane, hack/build-control-plane.sh): N Pods that join a PodGroup, created by C
keep-alive HTTPS clients at once, without and with the webhook registered (URL
mode, default settings), in the same run. Prints Pods/s, p50/p99/max create
latency, failed creates, and the ratios with/without; --json writes them.

    python bench/burst_bench.py [--counts 1000,5000] [--concurrency 16,32,64] [--workers 2] [--json FILE]

Everything binds to 127.0.0.1 and stops by itself (each burst is bounded in time).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import yaml  # noqa: E402

from tests.e2e import burst  # noqa: E402
from tests.e2e.controlplane import ControlPlane  # noqa: E402
from tests.server.harness import REPO, Server  # noqa: E402
from webhook import config as config_mod  # noqa: E402
from webhook.registration import Endpoint, configurations  # noqa: E402

E2E_CONFIG = os.path.join(REPO, "tests", "e2e", "config.yaml")
GPU = {"name": "gpu", "resourceClaimTemplateName": "gpus"}


def kubectl(cp: ControlPlane, *args: str, stdin: str | None = None) -> str:
    return subprocess.run([cp.kubectl, "--kubeconfig", cp.kubeconfig("admin"), *args], input=stdin, text=True,
                          capture_output=True, check=True, timeout=300).stdout


def register(cp: ControlPlane, server: Server) -> None:
    with open(os.path.join(server.cert_dir, "ca.crt"), "rb") as f:
        ca = f.read()
    docs = configurations(config_mod.load(E2E_CONFIG), Endpoint(ca, url=f"https://127.0.0.1:{server.port}"),
                          name="workload-webhook", namespace="workload-webhook")
    kubectl(cp, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def unregister(cp: ControlPlane) -> None:
    kubectl(cp, "delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration", "-l",
            "app.kubernetes.io/name=workload-webhook", "--ignore-not-found")
    kubectl(cp, "delete", "mutatingwebhookconfiguration", "workload-webhook", "--ignore-not-found")
    kubectl(cp, "delete", "validatingwebhookconfiguration", "workload-webhook", "--ignore-not-found")


def wait_for(cp: ControlPlane, namespace: str, webhook_on: bool) -> None:
    """Until the API server's view of the registrations matches: a dry-run Pod is
    (or is not) joined to its group."""
    probe = burst.burst_pod("probe", "burst")
    probe["metadata"]["namespace"] = namespace
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = json.loads(kubectl(cp, "create", "-f", "-", "--dry-run=server", "-o", "json", stdin=json.dumps(probe)))
        if (out["spec"].get("resourceClaims") == [GPU]) == webhook_on:
            return
        time.sleep(0.3)
    raise SystemExit(f"registration did not take effect (webhook {'on' if webhook_on else 'off'})")


def established(port: int) -> int:
    """Connections to the webhook's port now (kube-apiserver's pool), from /proc/net/tcp."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                        count += 1
        except OSError:
            pass
    return count


class ConnectionSampler:
    """The most connections kube-apiserver held open to the webhook during a burst."""

    def __init__(self, port: int):
        import threading
        self.port, self.peak, self.stop = port, 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            self.peak = max(self.peak, established(self.port))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(2)


def cpu_seconds(pids: list[int], children: bool = True) -> float:
    """utime + stime of these processes (and their children alive now)."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    family = set(pids)
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(p) in family or (children and int(fields[1]) in family):
                total += (int(fields[11]) + int(fields[12])) / tick
    return total


def row(label: str, r: burst.BurstResult, peak_connections: int = 0) -> dict:
    return {"run": label, "pods": r.count, "concurrency": r.concurrency, "created": r.created,
            "failed": len(r.failures), "pods_per_s": round(r.rate, 1), "p50_ms": round(r.quantile(0.5) * 1000, 1),
            "p99_ms": round(r.quantile(0.99) * 1000, 1), "max_ms": round(max(r.latencies or [0]) * 1000, 1),
            "webhook_connections_peak": peak_connections, "first_failures": r.failures[:3]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", default="1000,5000")
    ap.add_argument("--concurrency", default="16,32,64")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    bin_dir = subprocess.run([os.path.join(REPO, "hack", "build-control-plane.sh")], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
    rows = []
    with tempfile.TemporaryDirectory(prefix="burst-bench-") as work:
        with ControlPlane(bin_dir, os.path.join(work, "cp")) as cp:
            os.makedirs(os.path.join(work, "hook"))
            server = Server(os.path.join(work, "hook"), config=E2E_CONFIG, workers=args.workers,
                            extra=["--cluster", "kubeconfig", "--kubeconfig", cp.kubeconfig("admin")]).start()
            try:
                for count in (int(c) for c in args.counts.split(",")):
                    for conc in (int(c) for c in args.concurrency.split(",")):
                        pair = {}
                        for label in ("no webhook", "webhook"):
                            ns = f"burst-{uuid.uuid4().hex[:6]}"
                            kubectl(cp, "create", "namespace", ns)
                            group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                     "metadata": {"name": "burst", "namespace": ns},
                                     "spec": {"schedulingPolicy": {"gang": {"minCount": count}},
                                              "disruptionMode": {"single": {}}, "resourceClaims": [GPU]}}
                            kubectl(cp, "apply", "-f", "-", stdin=json.dumps(group))
                            if label == "webhook":
                                register(cp, server)
                            else:
                                unregister(cp)
                            wait_for(cp, ns, label == "webhook")
                            groups = {"kube-apiserver": [cp._apiserver.pid], "etcd": [cp._etcd.pid],
                                      "webhook": [server.proc.pid], "client": [os.getpid()]}
                            own = {"client"}         # the bench's own children are the servers above
                            cpu_before = {k: cpu_seconds(v, k not in own) for k, v in groups.items()}
                            with ConnectionSampler(server.port) as sampler:
                                result = burst.run(cp, ns, "burst", count, conc, max_seconds=600)
                            cpu = {k: round((cpu_seconds(v, k not in own) - cpu_before[k]) / max(result.created, 1) * 1000, 2)
                                   for k, v in groups.items()}
                            burst.delete_pods(cp, ns)
                            pair[label] = row(label, result, sampler.peak)
                            pair[label]["cpu_ms_per_pod"] = cpu
                            rows.append(pair[label])
                            print(json.dumps(pair[label]), file=sys.stderr)
                        off, on = pair["no webhook"], pair["webhook"]
                        off["ratio_pods_per_s"] = on["ratio_pods_per_s"] = round(on["pods_per_s"] / off["pods_per_s"], 2)
                        off["ratio_p99"] = on["ratio_p99"] = round(on["p99_ms"] / off["p99_ms"], 2)
            finally:
                server.stop()
    print(f"{'run':<11} {'pods':>5} {'conc':>4} {'Pods/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
          f"{'failed':>6} {'rate ratio':>10} {'p99 ratio':>9} {'conns':>5}  CPU ms per Pod")
    for r in rows:
        print(f"{r['run']:<11} {r['pods']:>5} {r['concurrency']:>4} {r['pods_per_s']:>7} {r['p50_ms']:>7} "
              f"{r['p99_ms']:>7} {r['max_ms']:>7} {r['failed']:>6} {r['ratio_pods_per_s']:>10} {r['ratio_p99']:>9} "
              f"{r['webhook_connections_peak']:>5}  " + " ".join(f"{k} {v}" for k, v in r["cpu_ms_per_pod"].items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 1 if any(r["failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
