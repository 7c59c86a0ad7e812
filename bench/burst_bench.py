"""Pod-burst benchmark through the real kube-apiserver + etcd (the e2e control
plane, hack/build-control-plane.sh): N Pods that join a PodGroup, created by C
keep-alive HTTPS clients at once, three ways in the same run:

- no webhook:  the API server alone (the membership policy still registered);
- floor:       a Go standard-library webhook (bench/go/floorwebhook) that decodes
               each review and answers the product's own patch for these Pods,
               with no lookup, registered with the product's own webhook entries
               (webhook/registration.py) and the same certificate;
- webhook:     the product (URL mode, the e2e config, N workers).

Prints Pods/s, p50/p99/max create latency, failed creates, the ratios to no
webhook and (for the product) to the floor, the peak of kube-apiserver's
connections to the webhook, and CPU ms per Pod of each process; --json writes them.

    python bench/burst_bench.py [--counts 1000,5000] [--concurrency 16,32,64] [--repeat 3] [--workers 2]
                                [--floor-http2] [--json FILE]

Each (count, concurrency) runs the three `--repeat` times, in alternating order;
the summary gives the medians and the ratios of the medians.

The Go program is built once into ~/.cache/workload-webhook/bench (outside git).
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

from tests.e2e import burst, scale  # noqa: E402
from tests.e2e.controlplane import ControlPlane  # noqa: E402
from tests.server.harness import REPO, Server, admission_request, free_port  # noqa: E402
from webhook import config as config_mod  # noqa: E402
from webhook.registration import Endpoint, configurations  # noqa: E402

E2E_CONFIG = os.path.join(REPO, "tests", "e2e", "config.yaml")
GPU = {"name": "gpu", "resourceClaimTemplateName": "gpus"}
RUNS = ("no webhook", "floor", "webhook")


def kubectl(cp: ControlPlane, *args: str, stdin: str | None = None) -> str:
    return subprocess.run([cp.kubectl, "--kubeconfig", cp.kubeconfig("admin"), *args], input=stdin, text=True,
                          capture_output=True, check=True, timeout=300).stdout


def register(cp: ControlPlane, server: Server, port: int) -> None:
    """The product's own registration, pointing at `port` (the product or the floor)."""
    with open(os.path.join(server.cert_dir, "ca.crt"), "rb") as f:
        ca = f.read()
    docs = configurations(config_mod.load(E2E_CONFIG), Endpoint(ca, url=f"https://127.0.0.1:{port}"),
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


def group(namespace: str, count: int) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "burst", "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": count}},
                     "disruptionMode": {"single": {}}, "resourceClaims": [GPU]}}


def product_patch(cp: ControlPlane, server: Server, work: str) -> str:
    """The product's own patch for a burst Pod, asked of the product, in a file for the floor."""
    kubectl(cp, "create", "namespace", "burst-setup")
    kubectl(cp, "apply", "-f", "-", stdin=json.dumps(group("burst-setup", 1)))
    pod = burst.burst_pod("probe", "burst")
    pod["metadata"]["namespace"] = "burst-setup"
    status, answer = server.review("/mutate", admission_request(pod, namespace="burst-setup"))
    import base64
    patch = base64.b64decode(answer["response"]["patch"])
    if status != 200 or b"/spec/resourceClaims" not in patch:
        raise SystemExit(f"the product gave no claims patch: {answer}")
    path = os.path.join(work, "patch.json")
    with open(path, "wb") as f:
        f.write(patch)
    return path


def start_floor(server: Server, work: str, patch: str, http2: bool = False) -> tuple[subprocess.Popen, int]:
    """The floor (bench/go/floorwebhook), with the product's certificate."""
    port = free_port()
    log = open(os.path.join(work, "floor.log"), "ab")
    proc = subprocess.Popen([scale.build_go("floorwebhook"), "-addr", f"127.0.0.1:{port}", "-patch", patch,
                             "-cert", os.path.join(server.cert_dir, "tls.crt"),
                             "-key", os.path.join(server.cert_dir, "tls.key"), *(["-http2"] if http2 else [])],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    import socket
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the floor webhook did not start")


def row(label: str, r: burst.BurstResult, peak_connections: int = 0) -> dict:
    return {"run": label, "pods": r.count, "concurrency": r.concurrency, "created": r.created,
            "failed": len(r.failures), "pods_per_s": round(r.rate, 1), "p50_ms": round(r.quantile(0.5) * 1000, 1),
            "p99_ms": round(r.quantile(0.99) * 1000, 1), "max_ms": round(max(r.latencies or [0]) * 1000, 1),
            "webhook_connections_peak": peak_connections, "first_failures": r.failures[:3]}


def summarize(count: int, conc: int, cell: dict[str, list[dict]]) -> dict:
    import statistics
    rate = {k: round(statistics.median(r["pods_per_s"] for r in v), 1) for k, v in cell.items()}
    p99 = {k: round(statistics.median(r["p99_ms"] for r in v), 1) for k, v in cell.items()}
    extra = {"floor_http2_vs_floor": round(rate["floor http2"] / rate["floor"], 2)} if "floor http2" in rate else {}
    return {"pods": count, "concurrency": conc, "pods_per_s": rate, "p99_ms": p99, **extra,
            "floor_vs_none": round(rate["floor"] / rate["no webhook"], 2),
            "webhook_vs_floor": round(rate["webhook"] / rate["floor"], 2),
            "p99_webhook_vs_floor": round(p99["webhook"] / p99["floor"], 2),
            "failed": sum(r["failed"] for v in cell.values() for r in v)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", default="1000,5000")
    ap.add_argument("--concurrency", default="16,32,64")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--floor-http2", action="store_true",
                    help="also the floor offering HTTP/2 (one connection; the product speaks HTTP/1.1)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    bin_dir = subprocess.run([os.path.join(REPO, "hack", "build-control-plane.sh")], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
    rows, summary = [], []
    with tempfile.TemporaryDirectory(prefix="burst-bench-") as work:
        with ControlPlane(bin_dir, os.path.join(work, "cp")) as cp:
            os.makedirs(os.path.join(work, "hook"))
            server = Server(os.path.join(work, "hook"), config=E2E_CONFIG, workers=args.workers,
                            extra=["--cluster", "kubeconfig", "--kubeconfig", cp.kubeconfig("admin")]).start()
            floors: list[subprocess.Popen] = []
            runs = RUNS + (("floor http2",) if args.floor_http2 else ())
            try:
                patch = product_patch(cp, server, work)
                ports, pids = {"webhook": server.port}, {"webhook": server.proc.pid}
                for label in [r for r in runs if r.startswith("floor")]:
                    proc, ports[label] = start_floor(server, work, patch, http2=label == "floor http2")
                    pids[label] = proc.pid
                    floors.append(proc)
                for count in (int(c) for c in args.counts.split(",")):
                    for conc in (int(c) for c in args.concurrency.split(",")):
                        cell = {label: [] for label in runs}
                        for label in [lb for rep in range(args.repeat) for lb in (runs if rep % 2 == 0 else runs[::-1])]:
                            ns = f"burst-{uuid.uuid4().hex[:6]}"
                            kubectl(cp, "create", "namespace", ns)
                            kubectl(cp, "apply", "-f", "-", stdin=json.dumps(group(ns, count)))
                            unregister(cp)
                            wait_for(cp, ns, False)
                            if label in ports:
                                register(cp, server, ports[label])
                                wait_for(cp, ns, True)
                            groups = {"kube-apiserver": [cp._apiserver.pid], "etcd": [cp._etcd.pid],
                                      "webhook": [pids.get(label, server.proc.pid)], "client": [os.getpid()]}
                            own = {"client"}         # the bench's own children are the servers above
                            cpu_before = {k: cpu_seconds(v, k not in own) for k, v in groups.items()}
                            with ConnectionSampler(ports.get(label, server.port)) as sampler:
                                result = burst.run(cp, ns, "burst", count, conc, max_seconds=600)
                            cpu = {k: round((cpu_seconds(v, k not in own) - cpu_before[k]) / max(result.created, 1) * 1000, 2)
                                   for k, v in groups.items()}
                            if label == "no webhook":
                                del cpu["webhook"]
                            burst.delete_pods(cp, ns)
                            one = row(label, result, sampler.peak if label in ports else 0)
                            one["cpu_ms_per_pod"] = cpu
                            cell[label].append(one)
                            rows.append(one)
                            print(json.dumps(one), file=sys.stderr)
                        summary.append(summarize(count, conc, cell))
            finally:
                unregister(cp)
                for proc in floors:
                    proc.kill()
                    proc.wait(10)
                server.stop()
    print(f"{'run':<11} {'pods':>5} {'conc':>4} {'Pods/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
          f"{'failed':>6} {'conns':>5}  CPU ms per Pod")
    for r in rows:
        print(f"{r['run']:<11} {r['pods']:>5} {r['concurrency']:>4} {r['pods_per_s']:>7} {r['p50_ms']:>7} "
              f"{r['p99_ms']:>7} {r['max_ms']:>7} {r['failed']:>6} {r['webhook_connections_peak']:>5}  "
              + " ".join(f"{k} {v}" for k, v in r["cpu_ms_per_pod"].items()))
    print(f"\nmedians of {args.repeat}: {'pods':>5} {'conc':>4}  {'none Pods/s':>11} {'floor':>6} {'webhook':>7}  "
          f"{'floor/none':>10} {'webhook/floor':>13}  {'p99 none':>8} {'floor':>6} {'webhook':>7} "
          f"{'p99 webhook/floor':>17}  failed")
    for c in summary:
        print(f"{'':<14} {c['pods']:>5} {c['concurrency']:>4}  {c['pods_per_s']['no webhook']:>11} "
              f"{c['pods_per_s']['floor']:>6} {c['pods_per_s']['webhook']:>7}  {c['floor_vs_none']:>10} "
              f"{c['webhook_vs_floor']:>13}  {c['p99_ms']['no webhook']:>8} {c['p99_ms']['floor']:>6} "
              f"{c['p99_ms']['webhook']:>7} {c['p99_webhook_vs_floor']:>17}  {c['failed']}"
              + (f"  floor http2 {c['pods_per_s']['floor http2']} Pods/s, p99 {c['p99_ms']['floor http2']} ms"
                 if "floor http2" in c["pods_per_s"] else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": rows, "summary": summary}, f, indent=2)
    return 1 if any(r["failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
