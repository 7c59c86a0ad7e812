"""Issue 31 on a real node: jobs written for Coscheduling and for Volcano are
gang-scheduled by kube-scheduler, with no foreign scheduler installed anywhere, and
the migration guide (docs/migrating-to-in-tree-gangs.md) walked step by step.

The real kubelet, containerd, kube-scheduler and kube-controller-manager of
tests/e2e/node.py; the chart installed from the image built from this tree (two
replicas: the bridge runs under its Lease, with the chart's RBAC); the foreign CRDs
restated from the projects' own definitions (tests/e2e/data, sources in their
headers). Room is an extended resource of the node, `example.com/slot`, one per Pod:
the test sets how many fit.

1. before the bridge: a Volcano job's Pods (a Deployment, `schedulerName: volcano`)
   wait for a scheduler that is not there; `audit` says they depend on the bridge;
2. the bridge on (`helm upgrade`), the old scheduler drained (its waiting Pods
   recreated: handed to the default scheduler, joined): none bound while three fit,
   all four bound together once the fourth fits; the Volcano status Running;
3. the same for a Coscheduling job; `explain` shows the foreign group, its mirror and
   the members;
4. the controllers move to the in-tree API (here: the same Deployment with the in-tree
   label and a PodGroup of its own); the foreign PodGroups go, their mirrors with them
   (the garbage collector); `audit` finds no job left that depends on the bridge;
5. the bridge off (`helm upgrade`): the in-tree gang still runs.

Run it under the real-node lock: flock /tmp/ww-realnode.lock python3 -m pytest tests/e2e/test_bridge_node.py"""
from __future__ import annotations

import json
import os
import sys
import time

import pytest
import yaml

from tests.e2e import summary
from tests.e2e.node import NODE_NAME
from tests.e2e.test_chart import CHART
from tests.e2e.test_chart_node import wait_for as chart_wait
from tests.server.harness import REPO
from webhook.foreign.dialects import BRIDGE_LABEL

NS = "ww-bridge"
JOBS = "ww-jobs"
RELEASE = "wwb"
FULLNAME = f"{RELEASE}-workload-webhook"
SLOT = "example.com/slot"
DATA = os.path.join(REPO, "tests", "e2e", "data")
COS = "scheduling.x-k8s.io"
VOL = "scheduling.volcano.sh"
SCHEDULER_NAMES = ["volcano", "scheduler-plugins-scheduler"]
UNBOUND_WINDOW = 8.0
SETTLE = 120.0


def wait_for(node, what: str, check, timeout: float = SETTLE, interval: float = 0.5):
    return chart_wait(what, check, node, timeout=timeout, interval=interval, namespace=JOBS)


def get(node, path: str) -> dict | None:
    status, body = node.api("GET", path)
    return body if status == 200 else None


def set_slots(node, count: int) -> None:
    """How many gang Pods fit on the node (the kubelet keeps an extended resource as patched)."""
    node.api("PATCH", f"/api/v1/nodes/{NODE_NAME}/status",
             {"status": {"capacity": {SLOT: str(count)}, "allocatable": {SLOT: str(count)}}},
             "application/merge-patch+json")


def helm_bridge(node, on: bool) -> None:
    """The guide's step: the bridge on or off in the release's values."""
    args = ["upgrade", RELEASE, CHART, "-n", NS, "--reuse-values",
            "--set", f"config.bridge.coscheduling={str(on).lower()}",
            "--set", f"config.bridge.volcano={str(on).lower()}",
            "--set-json", f"config.bridge.schedulerNames={json.dumps(SCHEDULER_NAMES if on else [])}",
            "--wait", "--timeout", "180s"]
    proc = node.helm(*args, check=False, timeout=240)
    assert proc.returncode == 0, f"{proc.stderr[-3000:]}\n{node.diagnose(NS)}"
    # The serving Pods register the new configuration; the API server picks it up asynchronously.
    probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": JOBS,
                                                          "annotations": {"scheduling.k8s.io/group-name": "probe"}},
             "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]}}
    wait_for(node, f"the bridge {'on' if on else 'off'} at admission", lambda: (json.loads(node.kubectl(
        "create", "-f", "-", "--dry-run=server", "-o", "json", input=json.dumps(probe)).stdout)["spec"]
        ["schedulerName"] == "default-scheduler") == on, interval=1)


def drain(node, scheduler: str) -> None:
    """The guide's step 3: Pods still waiting under the old scheduler's name, deleted (their
    controllers create them again), with the guide's own command line."""
    script = (f"{node.kubectl_bin} get pods -A --field-selector=status.phase=Pending -o jsonpath="
              f"'{{range .items[?(@.spec.schedulerName==\"{scheduler}\")]}}{{.metadata.namespace}}/{{.metadata.name}}"
              f"{{\"\\n\"}}{{end}}' | while IFS=/ read -r ns name; do {node.kubectl_bin} delete pod -n \"$ns\" "
              f"\"$name\" --wait=false; done")
    out = node.run(["sh", "-c", script])
    assert out.stdout.count("deleted") == 4, out.stdout + out.stderr


def cli(node, *args: str):
    """workload-webhook from this tree, inside the node's network namespace."""
    return node.run(["env", f"PYTHONPATH={REPO}", sys.executable, "-m", "webhook", *args], check=False, timeout=180)


def deployment(name: str, image: str, meta: dict, scheduler: str | None = None, replicas: int = 4) -> dict:
    container = {"name": "worker", "image": image, "imagePullPolicy": "Never",
                 "resources": {"requests": {SLOT: "1", "cpu": "10m", "memory": "16Mi"}, "limits": {SLOT: "1"}}}
    spec = {"containers": [container], "terminationGracePeriodSeconds": 1}
    if scheduler:
        spec["schedulerName"] = scheduler
    labels = {"app": name, **meta.get("labels", {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": JOBS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {**meta, "labels": labels}, "spec": spec}}}


def foreign(group: str, name: str, min_member: int, owner: dict, **spec) -> dict:
    version = "v1alpha1" if group == COS else "v1beta1"
    obj = {"apiVersion": f"{group}/{version}", "kind": "PodGroup",
           "metadata": {"name": name, "namespace": JOBS, "ownerReferences": [owner]},
           "spec": {"minMember": min_member, **spec}}
    if group == VOL:
        obj["status"] = {"phase": "Pending"}       # as the operators create Volcano PodGroups
    return obj


def apply(node, obj: dict):
    return node.kubectl("apply", "-f", "-", input=yaml.safe_dump(obj))


def owner_of(node, name: str) -> dict:
    d = json.loads(node.kubectl("get", "deployment", name, "-n", JOBS, "-o", "json").stdout)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": d["metadata"]["uid"],
            "controller": True}


def pods(node, app: str) -> list[dict]:
    return json.loads(node.kubectl("get", "pods", "-n", JOBS, "-l", f"app={app}", "-o", "json").stdout)["items"]


def live(node, app: str) -> list[dict]:
    return [p for p in pods(node, app) if not p["metadata"].get("deletionTimestamp")]


def bound(items: list[dict]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in items if p["spec"].get("nodeName"))


def stays_unbound(node, app: str, seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if bound(live(node, app)):
            return bound(live(node, app))
        time.sleep(0.5)
    return []


def status_of(node, group: str, name: str) -> dict:
    version = "v1alpha1" if group == COS else "v1beta1"
    return (get(node, f"/apis/{group}/{version}/namespaces/{JOBS}/podgroups/{name}") or {}).get("status") or {}


@pytest.fixture(scope="module")
def release(real_node, images, tmp_path_factory):
    node = real_node
    for crd in ("coscheduling-podgroup-crd.yaml", "volcano-podgroup-crd.yaml"):
        node.kubectl("apply", "-f", os.path.join(DATA, crd))
    node.kubectl("wait", "--for=condition=Established", f"crd/podgroups.{COS}", f"crd/podgroups.{VOL}",
                 "--timeout=60s")
    node.kubectl("create", "namespace", JOBS)
    wait_for(node, "the default ServiceAccount",
             lambda: get(node, f"/api/v1/namespaces/{JOBS}/serviceaccounts/default"))
    repository, tag = images["WEBHOOK_IMAGE"].rsplit(":", 1)
    values = tmp_path_factory.mktemp("bridge-node") / "values.yaml"
    values.write_text(yaml.safe_dump({
        "image": {"repository": repository.removeprefix("docker.io/library/"), "tag": tag, "pullPolicy": "Never"},
        "replicaCount": 2, "config": {"bridge": {}}}))
    proc = node.helm("install", RELEASE, CHART, "-n", NS, "--create-namespace", "-f", str(values), "--wait",
                     "--timeout", "180s", check=False, timeout=240)
    if proc.returncode != 0:
        pytest.fail(f"helm install failed:\n{proc.stderr[-3000:]}\n{node.diagnose(NS)}", pytrace=False)
    wait_for(node, "the Pod webhook registered", lambda: "pods.mutate.workload-webhook.k8s.io" in node.kubectl(
        "get", "mutatingwebhookconfiguration", FULLNAME, "-o", "json", check=False).stdout)
    set_slots(node, 3)
    yield node
    for kind in ("deployment", f"podgroups.{COS}", f"podgroups.{VOL}", "podgroups.scheduling.k8s.io"):
        node.kubectl("delete", kind, "--all", "-n", JOBS, "--wait=false", check=False)
    node.helm("uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "60s", check=False)


def test_1_before_the_bridge_a_volcano_job_waits_for_a_scheduler_that_is_not_there(release, images):
    node = release
    apply(node, deployment("vol", images["PAUSE_IMAGE"], {"annotations": {"scheduling.k8s.io/group-name": "vol"}},
                           scheduler="volcano"))
    apply(node, foreign(VOL, "vol", 4, owner_of(node, "vol")))
    waiting = wait_for(node, "four Pods", lambda: len(live(node, "vol")) == 4 and live(node, "vol"))
    assert stays_unbound(node, "vol", UNBOUND_WINDOW) == []
    assert {p["spec"]["schedulerName"] for p in waiting} == {"volcano"}
    assert not any(p["spec"].get("schedulingGroup") for p in waiting)
    out = cli(node, "audit", "-o", "json")
    deps = json.loads(out.stdout)["bridge"]["dependents"]
    assert [(d["name"], d["owner"], d["mirrored"], d["bridged"]) for d in deps] == [
        ("vol", "Deployment/vol", False, False)], out.stdout + out.stderr


def test_2_bridge_on_old_scheduler_drained_volcano_gang_none_while_three_fit_then_all_four(release):
    node = release
    helm_bridge(node, True)
    mirror = wait_for(node, "the mirror of the Volcano group", lambda: get(
        node, f"/apis/scheduling.k8s.io/v1beta1/namespaces/{JOBS}/podgroups/vol"))
    assert mirror["metadata"]["labels"] == {BRIDGE_LABEL: "volcano"}
    assert mirror["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert status_of(node, VOL, "vol")["phase"] == "Inqueue"
    drain(node, "volcano")
    fresh = wait_for(node, "four recreated Pods", lambda: len(ps := live(node, "vol")) == 4 and all(
        p["spec"]["schedulerName"] == "default-scheduler" for p in ps) and ps)
    for p in fresh:
        assert p["spec"]["schedulingGroup"] == {"podGroupName": "vol"}
    assert stays_unbound(node, "vol", UNBOUND_WINDOW) == [], "bound while only three fit"
    t0 = time.monotonic()
    set_slots(node, 4)
    wait_for(node, "all four bound", lambda: len(bound(live(node, "vol"))) == 4)
    took = time.monotonic() - t0
    st = wait_for(node, "Volcano phase Running", lambda: (s := status_of(node, VOL, "vol")).get("phase") == "Running"
                  and s.get("running") == 4 and s)
    assert [c["type"] for c in st["conditions"]] == ["Scheduled"]
    summary.add(f"bridge, real node: Volcano gang of 4 bound {took:.1f} s after the fourth slot appeared")


def test_3_a_coscheduling_gang_none_while_three_fit_then_all_four_and_explain(release, images):
    node = release
    apply(node, deployment("cos", images["PAUSE_IMAGE"], {"labels": {"scheduling.x-k8s.io/pod-group": "cos"}},
                           scheduler="scheduler-plugins-scheduler"))
    apply(node, foreign(COS, "cos", 4, owner_of(node, "cos"), scheduleTimeoutSeconds=30))
    wait_for(node, "four joined Pods", lambda: len(ps := live(node, "cos")) == 4 and all(
        (p["spec"].get("schedulingGroup") or {}).get("podGroupName") == "cos" for p in ps))
    set_slots(node, 7)                          # the Volcano gang holds four: three left
    assert stays_unbound(node, "cos", UNBOUND_WINDOW) == [], "bound while only three fit"
    set_slots(node, 8)
    wait_for(node, "all four bound", lambda: len(bound(live(node, "cos"))) == 4)
    wait_for(node, "Coscheduling phase Running", lambda: status_of(node, COS, "cos").get("phase") == "Running")
    out = cli(node, "explain", "podgroups.scheduling.x-k8s.io/cos", "-n", JOBS, "--color", "never")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "PodGroup.scheduling.x-k8s.io cos · Coscheduling · minMember 4 · (asked)" in text, text
    assert "phase: Running (4 running, 0 succeeded, 0 failed)" in text, text
    assert "mirror: the in-tree PodGroup cos (gang minCount 4), made by the bridge" in text, text
    assert "members named by metadata.labels[scheduling.x-k8s.io/pod-group]: 4, joined 4" in text, text
    assert "PodGroup cos · gang minCount 4" in text and "4 joined · 4 bound · 0 pending" in text, text
    assert "not mirrored: spec.scheduleTimeoutSeconds" in text, text
    said = node.kubectl("get", "events", "-n", JOBS, "--field-selector", "involvedObject.name=cos", "-o",
                        "jsonpath={.items[*].reason}").stdout.split()
    assert "Mirrored" in said and "NotMirrored" in said, said
    lease = get(node, f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{FULLNAME}-bridge")
    assert lease and lease["spec"].get("holderIdentity"), lease


def test_4_controllers_on_the_in_tree_api_and_audit_finds_no_dependent(release, images):
    node = release
    deps = json.loads(cli(node, "audit", "-o", "json").stdout)["bridge"]["dependents"]
    assert sorted((d["name"], d["mirrored"], d["phase"]) for d in deps) == [("cos", True, "Running"),
                                                                          ("vol", True, "Running")]
    for app in ("cos", "vol"):       # the job goes; its foreign PodGroup with it, and the mirror with that
        node.kubectl("delete", "deployment", app, "-n", JOBS)
    wait_for(node, "the garbage collector to take the foreign PodGroups and their mirrors", lambda: not any(
        json.loads(node.kubectl("get", kind, "-n", JOBS, "-o", "json").stdout)["items"]
        for kind in (f"podgroups.{COS}", f"podgroups.{VOL}", "podgroups.scheduling.k8s.io")))
    wait_for(node, "the old Pods gone", lambda: not pods(node, "cos") and not pods(node, "vol"))
    # the job now speaks the in-tree API: a PodGroup of its own and the in-tree label
    apply(node, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": "native", "namespace": JOBS},
                 "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}})
    apply(node, deployment("native", images["PAUSE_IMAGE"], {"labels": {"scheduling.k8s.io/pod-group": "native"}}))
    wait_for(node, "the in-tree gang bound", lambda: len(bound(live(node, "native"))) == 4)
    out = cli(node, "audit")
    assert "bridge: no job depends on it (no Coscheduling or Volcano PodGroup): it can be switched off" in out.stdout, \
        out.stdout + out.stderr


def test_5_bridge_off_and_the_in_tree_gang_still_runs(release):
    node = release
    helm_bridge(node, False)
    hooks = json.loads(node.kubectl("get", "mutatingwebhookconfiguration", FULLNAME, "-o", "json").stdout)["webhooks"]
    pod_hook = next(h for h in hooks if h["name"] == "pods.mutate.workload-webhook.k8s.io")
    assert "scheduling.x-k8s.io/pod-group" not in pod_hook["matchConditions"][0]["expression"]
    assert not get(node, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles/{FULLNAME}") or all(
        "leases" not in r.get("resources", []) for r in get(
            node, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles/{FULLNAME}")["rules"])
    assert len(bound(live(node, "native"))) == 4
    node.kubectl("delete", "pods", "-n", JOBS, "-l", "app=native", "--wait=false")       # a fresh start, no bridge
    wait_for(node, "the in-tree gang bound again", lambda: len(ps := live(node, "native")) == 4 and len(bound(ps)) == 4)
