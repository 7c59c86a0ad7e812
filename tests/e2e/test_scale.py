"""The real `workload-webhook serve` (default settings, 2 workers) against a real
kube-apiserver holding 20,000 jobs (a Workload and a PodGroup each, with a claim):
every worker's cache holds all 20,000 PodGroups, the processes' total RSS stays
under the chart's default memory limit, a Pod joins its group from the cache,
and the watch goes on from the master's LIST. Counts and sizes only, no times
(bench/scale_bench.py prints those). Its own control plane: 40,000 objects would
slow every other test's LISTs."""
import base64
import json
import os
import re
import time

import pytest
import yaml

from tests import memory
from tests.e2e import scale
from tests.e2e.controlplane import ControlPlane
from tests.server.harness import REPO, Server, admission_request

JOBS = 20_000
WORKERS = 2
VALUES = os.path.join(REPO, "charts", "workload-webhook", "values.yaml")
UNITS = {"Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3}


def chart_limit_bytes() -> int:
    with open(VALUES) as f:
        limit = yaml.safe_load(f)["resources"]["limits"]["memory"]
    number, unit = re.fullmatch(r"(\d+)(Ki|Mi|Gi)", limit).groups()
    return int(number) * UNITS[unit]


@pytest.fixture(scope="module")
def cluster(bin_dir, tmp_path_factory):
    cp = ControlPlane(bin_dir, tmp_path_factory.mktemp("scale"))
    cp.start()
    try:
        scale.create_namespaces(cp)
        written = scale.clone_jobs(cp, 0, JOBS)
        assert written["written"] == 2 * (JOBS - 1)
        for plural in ("workloads", "podgroups"):
            assert scale.wait_listed(cp, plural, JOBS, timeout=120) == JOBS
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="module")
def served(cluster, tmp_path_factory):
    server = Server(str(tmp_path_factory.mktemp("scale-serve")), workers=WORKERS,
                    extra=["--cluster", "kubeconfig", "--kubeconfig", cluster.kubeconfig("admin")])
    server.start(timeout=120)
    try:
        waited, lines = scale.wait_synced(server.log_path, 0, WORKERS, timeout=120)
        assert waited is not None, f"not every worker synced:\n{server.log()}"
        yield server, lines
    finally:
        server.stop()


def _join(server, i: int) -> list[dict]:
    """The patch for a Pod that joins job i's group."""
    group = scale.podgroup(i)
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"{scale.job(i)}-w-0", "namespace": group["metadata"]["namespace"],
                        "labels": {"scheduling.k8s.io/pod-group": group["metadata"]["name"]}},
           "spec": {"containers": [{"name": "trainer", "image": "registry.example/trainer:1"}]}}
    status, answer = server.review("/mutate", admission_request(pod, namespace=group["metadata"]["namespace"]))
    assert status == 200 and answer["response"]["allowed"], answer
    return json.loads(base64.b64decode(answer["response"].get("patch") or "W10="))


def _lookups(server, source: str) -> float:
    _, _, body = server.get("/metrics")
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith("workload_webhook_cluster_lookups_total{") and 'resource="podgroups"' in line \
                and f'source="{source}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_every_worker_holds_every_podgroup(served):
    _, lines = served
    counts = [int(re.search(r"synced: (\d+) objects", line["msg"]).group(1)) for line in lines]
    assert counts == [JOBS] * WORKERS, lines


def test_total_rss_stays_under_the_charts_default_limit(served):
    server, _ = served
    held = memory.serve_memory(server.proc.pid)
    assert len(held["workers"]) == WORKERS
    total = sum(p["rss"] for p in [held["master"], *held["workers"]]) * 1024
    assert total < chart_limit_bytes(), held


def test_a_pod_joins_from_the_cache(served):
    server, _ = served
    before = _lookups(server, "cache")
    patch = _join(server, JOBS - 1)
    assert {"op": "add", "path": "/spec/resourceClaims", "value": [scale.CLAIM]} in patch
    assert _lookups(server, "cache") == before + 1


def test_the_watch_goes_on_from_the_masters_list(cluster, served):
    """A group created after the LIST reaches every worker's cache through the watch."""
    server, _ = served
    scale._api(cluster, "POST", scale.GROUP.format(ns=scale.namespace(JOBS)) + "/podgroups", scale.podgroup(JOBS))
    hits, deadline = 0, time.monotonic() + 30
    while hits < 2 * WORKERS and time.monotonic() < deadline:   # from the cache, whichever worker answers
        before = _lookups(server, "cache")
        _join(server, JOBS)
        hits += 1 if _lookups(server, "cache") > before else 0
        time.sleep(0.05)
    assert hits >= 2 * WORKERS
