"""Issue 36, points 2 and 3, on the real node (tests/e2e/node.py: the real kubelet, containerd,
kube-scheduler and kube-controller-manager): the bridge's process (webhook/server/bridge_process.py)
with only the live gang model on, against the node's API server, its metrics written to a
multiprocess directory as under the gunicorn master and read as the master renders them.

- a gang short of members says "waiting for members 3/4" as an Event on its PodGroup and in
  workload_webhook_gangs within seconds;
- a gang of two that the scheduler places says GangScheduled; evicting one member (the
  Eviction API) below minCount raises a GangDegraded Event, the degraded gauge and the
  time-to-degraded histogram.

Run it under the e2e lock: flock /tmp/ww-e2e.lock python3 -m pytest tests/e2e/test_gang_model_node.py"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

import pytest
from prometheus_client import CollectorRegistry, multiprocess
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client import generate_latest

from tests.e2e.node import in_ns
from tests.server.harness import REPO
from webhook.config import BridgeSettings, GangSettings
from webhook.kinds import PODGROUP

NS = "ww-gangs"
WITHIN = 30.0          # "within seconds": the model's tick, its settle second, the watch's delivery


def wait_for(what: str, check, timeout: float = WITHIN, interval: float = 0.3, diagnose=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(interval)
    pytest.fail(f"{what}: not within {timeout:.0f} s\n{diagnose()}")


def podgroup_version(node) -> str:
    """The first version the API server serves PodGroups in (scheduling.k8s.io's preferred one is
    PriorityClass's v1)."""
    for version in PODGROUP.versions:
        if node.api("GET", f"/apis/scheduling.k8s.io/{version}/podgroups?limit=1")[0] == 200:
            return version
    pytest.fail("the API server serves no PodGroups")


def podgroup(version: str, name: str, min_count: int) -> dict:
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def pod(name: str, group: str, image: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingGroup": {"podGroupName": group}, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": image, "imagePullPolicy": "Never"}]}}


def create(node, path: str, obj: dict) -> None:
    status, body = node.api("POST", path, obj)
    assert status in (200, 201), (status, body)


def events(node, name: str) -> list[dict]:
    status, body = node.api("GET", f"/apis/events.k8s.io/v1/namespaces/{NS}/events")
    assert status == 200, body
    return sorted((e for e in body.get("items") or [] if (e.get("regarding") or {}).get("name") == name
                   and e.get("reportingController") == "workload-webhook-gangs"), key=lambda e: e.get("eventTime") or "")


def samples(directory: str) -> dict[tuple, float]:
    """The series as the master's /metrics renders the multiprocess directory."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)
    out = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def gauge(directory: str, state: str) -> float | None:
    return samples(directory).get(("workload_webhook_gangs", (("state", state),)))


@pytest.fixture(scope="module")
def model(real_node, tmp_path_factory):
    node = real_node
    status, _ = node.api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": NS}})
    assert status in (201, 409)
    directory = str(tmp_path_factory.mktemp("gang-metrics"))
    log = open(os.path.join(directory, "..", "bridge-process.log"), "w+")
    settings = BridgeSettings(leaseNamespace=NS, leaseDurationSeconds=6)
    env = dict(os.environ, PYTHONPATH=REPO, PROMETHEUS_MULTIPROC_DIR=directory)
    proc = subprocess.Popen(in_ns(sys.executable, "-m", "webhook.server.bridge_process", "--cluster", "kubeconfig",
                                  "--kubeconfig", node.cp.kubeconfig("admin"),
                                  "--settings", json.dumps(dataclasses.asdict(settings)),
                                  "--gangs", json.dumps(dataclasses.asdict(GangSettings(model=True))),
                                  "--log-format", "text"),
                            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)

    def diagnose() -> str:
        log.flush()
        log.seek(0)
        return "the bridge process's log:\n" + log.read()[-4000:]

    wait_for("the model holding the Lease and synced",
             lambda: samples(directory).get(("workload_webhook_gang_model_synced", ())) == 1 or proc.poll() is not None,
             timeout=60, diagnose=diagnose)
    assert proc.poll() is None, diagnose()
    yield node, directory, diagnose
    proc.terminate()
    proc.wait(15)
    log.close()


def test_a_gang_short_of_members_says_waiting_for_members_3_of_4(model, images):
    node, directory, diagnose = model
    version = podgroup_version(node)
    # The node is the whole suite's: other modules' gangs may be waiting too (the model counts the cluster).
    others = gauge(directory, "waiting_for_members") or 0
    create(node, f"/apis/scheduling.k8s.io/{version}/namespaces/{NS}/podgroups", podgroup(version, "short", 4))
    started = time.monotonic()
    for i in range(3):
        create(node, f"/api/v1/namespaces/{NS}/pods", pod(f"short-{i}", "short", images["PAUSE_IMAGE"]))
    said = wait_for("an Event saying waiting for members 3/4",
                    lambda: [e for e in events(node, "short") if "waiting for members 3/4" in e.get("note", "")],
                    diagnose=diagnose)
    assert said[-1]["reason"] == "GangWaitingForMembers" and said[-1]["type"] == "Normal"
    assert said[-1]["regarding"]["kind"] == "PodGroup" and said[-1]["regarding"].get("uid")
    assert time.monotonic() - started < WITHIN
    wait_for("workload_webhook_gangs{state=waiting_for_members} one more",
             lambda: gauge(directory, "waiting_for_members") == others + 1, diagnose=diagnose)
    # the three Pods are never placed: kube-scheduler keeps a gang short of quorum back
    status, body = node.api("GET", f"/api/v1/namespaces/{NS}/pods")
    assert not any((p.get("spec") or {}).get("nodeName") for p in body["items"]
                   if p["metadata"]["name"].startswith("short-"))


def test_evicting_a_member_of_a_running_gang_below_mincount_raises_degraded(model, images):
    node, directory, diagnose = model
    version = podgroup_version(node)
    others = gauge(directory, "degraded") or 0
    create(node, f"/apis/scheduling.k8s.io/{version}/namespaces/{NS}/podgroups", podgroup(version, "pair", 2))
    for i in range(2):
        create(node, f"/api/v1/namespaces/{NS}/pods", pod(f"pair-{i}", "pair", images["PAUSE_IMAGE"]))
    wait_for("a GangScheduled Event on the pair",
             lambda: [e for e in events(node, "pair") if e.get("reason") == "GangScheduled"],
             timeout=120, diagnose=lambda: diagnose() + "\n" + node.diagnose(NS))
    wait_for("both members Running", lambda: all(
        (node.api("GET", f"/api/v1/namespaces/{NS}/pods/pair-{i}")[1].get("status") or {}).get("phase") == "Running"
        for i in range(2)), timeout=120, diagnose=lambda: node.diagnose(NS))
    before = samples(directory).get(("workload_webhook_gang_degraded_seconds_count", ())) or 0
    status, body = node.api("POST", f"/api/v1/namespaces/{NS}/pods/pair-1/eviction",
                            {"apiVersion": "policy/v1", "kind": "Eviction",
                             "metadata": {"name": "pair-1", "namespace": NS}})
    assert status in (200, 201), (status, body)
    degraded = wait_for("a GangDegraded Event on the pair",
                        lambda: [e for e in events(node, "pair") if e.get("reason") == "GangDegraded"],
                        diagnose=diagnose)
    assert degraded[-1]["type"] == "Warning" and degraded[-1]["note"].startswith("gang degraded: 1/2"), degraded[-1]
    wait_for("workload_webhook_gangs{state=degraded} one more", lambda: gauge(directory, "degraded") == others + 1,
             diagnose=diagnose)
    assert samples(directory)[("workload_webhook_gang_degraded_seconds_count", ())] == before + 1
    # the PodGroup's own condition still says scheduled: only the model says it broke
    status, pg = node.api("GET", f"/apis/scheduling.k8s.io/{version}/namespaces/{NS}/podgroups/pair")
    conds = {c["type"]: c["status"] for c in (pg.get("status") or {}).get("conditions") or []}
    assert conds.get("PodGroupInitiallyScheduled") == "True", pg.get("status")
