"""Admission cost through a real kube-apiserver + etcd (hack/build-control-plane.sh):
create latency of 1,000 TrainJob-shaped objects (a VapJob CRD) with (a) no
admission, (b) this webhook, (c) the generated ValidatingAdmissionPolicies,
and of 1,000 Pods joining a PodGroup with (a) and (b). Prints median and p99,
the latency each adds over (a), and (c)'s added latency as a share of (b)'s.

    python bench/vap_bench.py [--count 1000] [--concurrency 8]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlparse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import yaml  # noqa: E402

from tests.e2e import burst  # noqa: E402
from tests.e2e.adopters import trainjob_crd_copy  # noqa: E402
from tests.e2e.controlplane import ControlPlane  # noqa: E402
from tests.server.harness import REPO, Server  # noqa: E402
from webhook import config as config_mod  # noqa: E402
from webhook.registration import Endpoint, configurations  # noqa: E402
from webhook.vap.targets import export  # noqa: E402

GROUP, PLURAL, NS = "vap.example.com", "vapjobs", "bench"
TARGET = {"group": GROUP, "kind": "VapJob", "versions": ["v1"], "groups": [{"at": "spec.scheduling", "size": "spec.replicas"}]}
CONFIG = {"targets": [TARGET], "pods": {"claimsToContainers": "all"}}


def kubectl(cp, *args, stdin=None):
    return subprocess.run([cp.kubectl, "--kubeconfig", cp.kubeconfig("admin"), *args], input=stdin, text=True,
                          capture_output=True, check=True, timeout=300).stdout


def vapjob(i: int, tag: str) -> dict:
    return {"apiVersion": f"{GROUP}/v1", "kind": "VapJob", "metadata": {"name": f"{tag}-{i}"},
            "spec": {"replicas": 8, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 8}}, "disruptionMode": {"all": {}},
                                                    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "gpu"}]}}}


def creates(cp, path: str, make, count: int, concurrency: int) -> list[float]:
    url = urlparse(cp.url)
    ctx = cp.ssl_context("admin")
    it, lock, lat, failures = iter(range(count)), threading.Lock(), [], []

    def client():
        conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=60)
        while True:
            with lock:
                i = next(it, None)
            if i is None:
                break
            body = json.dumps(make(i)).encode()
            t = time.perf_counter()
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            with lock:
                (lat.append(time.perf_counter() - t) if resp.status == 201 else failures.append(data[:200]))
        conn.close()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise SystemExit(f"{len(failures)} failed creates, e.g. {failures[0]!r}")
    return lat


def q(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(p * len(s)))] * 1000


def row(name, lat, base=None):
    med, p99 = statistics.median(lat) * 1000, q(lat, 0.99)
    added = "" if base is None else f"{med - statistics.median(base) * 1000:>+9.2f} {p99 - q(base, 0.99):>+9.2f}"
    print(f"{name:<34} {med:>8.2f} {p99:>8.2f} {added}")
    return med - (statistics.median(base) * 1000 if base else 0)


def wait(cp, check, what):
    deadline = time.monotonic() + 60
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not take effect")
        time.sleep(0.3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    bin_dir = subprocess.run([os.path.join(REPO, "hack", "build-control-plane.sh")], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
    with tempfile.TemporaryDirectory() as work, ControlPlane(bin_dir, os.path.join(work, "cp")) as cp:
        kubectl(cp, "apply", "-f", "-", stdin=trainjob_crd_copy(GROUP, "VapJob", PLURAL))
        kubectl(cp, "create", "namespace", NS)
        kubectl(cp, "apply", "-f", "-", stdin=yaml.safe_dump({
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "burst", "namespace": NS},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 1}},
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpus"}]}}))
        time.sleep(3)
        path = f"/apis/{GROUP}/v1/namespaces/{NS}/{PLURAL}"
        bad = {**vapjob(0, "probe"), "spec": {"replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}},
                                                                          "disruptionMode": {"all": {}}}}}

        def refused() -> bool:
            return subprocess.run([cp.kubectl, "--kubeconfig", cp.kubeconfig("admin"), "create", "-n", NS, "-f", "-",
                                   "--dry-run=server"], input=json.dumps(bad), text=True, capture_output=True).returncode != 0
        cfg_path = os.path.join(work, "config.yaml")
        with open(cfg_path, "w") as f:
            yaml.safe_dump(CONFIG, f)
        cfg = config_mod.load(cfg_path)
        creates(cp, path, lambda i: vapjob(i, "warm"), 100, args.concurrency)
        none = creates(cp, path, lambda i: vapjob(i, "none"), args.count, args.concurrency)
        os.makedirs(os.path.join(work, "serve"), exist_ok=True)
        server = Server(os.path.join(work, "serve"), config=cfg_path, extra=["--cluster", "kubeconfig", "--kubeconfig",
                                                                               cp.kubeconfig("admin")]).start()
        try:
            with open(os.path.join(server.cert_dir, "ca.crt"), "rb") as f:
                docs = configurations(cfg, Endpoint(f.read(), url=f"https://127.0.0.1:{server.port}"), name="ww")
            kubectl(cp, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
            wait(cp, refused, "the webhook")
            hook = creates(cp, path, lambda i: vapjob(i, "hook"), args.count, args.concurrency)
            pods_hook = burst.run(cp, NS, "burst", args.count, args.concurrency, prefix="hook").latencies
            kubectl(cp, "delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "ww")
            kubectl(cp, "delete", "validatingadmissionpolicy,validatingadmissionpolicybinding", "ww-pod-membership")
            wait(cp, lambda: not refused(), "removing the webhook")
        finally:
            server.stop()
        burst.delete_pods(cp, NS)
        pods_none = burst.run(cp, NS, "burst", args.count, args.concurrency, prefix="none").latencies
        policies = export(cfg, "ww").objects
        kubectl(cp, "apply", "-f", "-", stdin=yaml.safe_dump_all(policies))
        wait(cp, refused, "the policies")
        vap = creates(cp, path, lambda i: vapjob(i, "vap"), args.count, args.concurrency)
        print(f"create latency through kube-apiserver, {args.count} objects, {args.concurrency} concurrent clients (ms)")
        print(f"{'':<34} {'median':>8} {'p99':>8} {'+median':>9} {'+p99':>9}")
        row("TrainJob, no admission", none)
        added_hook = row("TrainJob, webhook", hook, none)
        added_vap = row("TrainJob, ValidatingAdmissionPolicy", vap, none)
        row("Pod joining a PodGroup, no webhook", pods_none)
        row("Pod joining a PodGroup, webhook", pods_hook, pods_none)
        if added_hook > 0:
            print(f"added median latency, policy / webhook: {added_vap / added_hook:.2f}")


if __name__ == "__main__":
    main()
