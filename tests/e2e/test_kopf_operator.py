"""The kopf example operator (examples/kopf-operator) against the real API server and
kube-scheduler: it builds each TrainJob's Workload and PodGroup with webhook.builder,
creates them and the Pods, and the scheduler places the gang all or nothing on fake
Nodes (tests/e2e/scheduler.py): 2 Nodes of 2 CPUs, Pods of 1 CPU. A gang of 5 gets
no Pod bound though 4 would fit; then a gang of 4 gets all 4 bound together.
Needs kopf (`pip install 'workload-webhook[kopf]'`, which scripts/test.sh installs): without it the test
fails, as any real component's absence does."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.e2e.rest import Api
from tests.e2e.scheduler import SCENARIO_LABEL, TAINT, Placement, Scheduler, make_nodes

try:
    import kopf  # noqa: F401   (the operator's framework, run below as `python -m kopf`)
except ImportError:
    kopf = None

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIO = "kopf-gang"
UNBOUND_WINDOW = 6.0


@pytest.fixture(scope="module")
def scheduler(bin_dir, cluster, tmp_path_factory):
    s = Scheduler(bin_dir, cluster, tmp_path_factory.mktemp("scheduler")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def operator(cluster, crds, tmp_path_factory):
    if kopf is None:
        from tests.e2e.conftest import _unavailable
        _unavailable("kopf is not installed (scripts/test.sh installs the package with its kopf extra)")
    ns = "kopf-example"
    api = Api(cluster)
    api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    pod_spec = {"container": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                "nodeSelector": {SCENARIO_LABEL: SCENARIO},
                "tolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}]}
    log = open(tmp_path_factory.mktemp("kopf") / "operator.log", "w+")
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig("admin")), "PYTHONPATH": REPO,
           "TRAINJOB_POD_SPEC": json.dumps(pod_spec)}
    proc = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", ns,
                             os.path.join(REPO, "examples", "kopf-operator", "operator.py")],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    yield ns, api, log
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _trainjob(ns: str, name: str, replicas: int) -> dict:
    return {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "image": "registry.example/trainer:1",
                     "scheduling": {"schedulingPolicy": {"gang": {}}, "disruptionMode": {"all": {}}}}}


def _wait_pods(api: Api, ns: str, prefix: str, count: int, log, timeout: float = 60) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = [p for p in api.must("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
                if p["metadata"]["name"].startswith(prefix)]
        if len(pods) == count:
            return pods
        time.sleep(0.2)
    log.seek(0)
    raise AssertionError(f"the operator made no {count} Pods for {prefix}; its log:\n{log.read()[-3000:]}")


def test_the_operator_builds_the_gang_and_the_scheduler_places_it_all_or_nothing(scheduler, operator):
    ns, api, log = operator
    make_nodes(api, SCENARIO, [{"cpu": 2}, {"cpu": 2}])
    api.must("POST", f"/apis/training.example.com/v1alpha1/namespaces/{ns}/trainjobs", _trainjob(ns, "too-big", 5))
    big = _wait_pods(api, ns, "too-big-worker-", 5, log)
    group = big[0]["spec"]["schedulingGroup"]["podGroupName"]
    pg = api.must("GET", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups/{group}")
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    assert pg["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    wl = api.must("GET", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/workloads/"
                         f"{pg['spec']['workloadRef']['workloadName']}")
    assert wl["spec"]["controllerRef"] == {"apiGroup": "training.example.com", "kind": "TrainJob", "name": "too-big"}
    placement = Placement()
    assert placement.stay_unbound(api, ns, UNBOUND_WINDOW) == [], "a gang of 5 on room for 4 got Pods bound"
    api.must("DELETE", f"/apis/training.example.com/v1alpha1/namespaces/{ns}/trainjobs/too-big")
    for p in big:                   # no garbage collector runs here: the test removes what it would
        api.call("DELETE", f"/api/v1/namespaces/{ns}/pods/{p['metadata']['name']}?gracePeriodSeconds=0")
    api.must("POST", f"/apis/training.example.com/v1alpha1/namespaces/{ns}/trainjobs", _trainjob(ns, "fits", 4))
    names = [p["metadata"]["name"] for p in _wait_pods(api, ns, "fits-worker-", 4, log)]
    assert placement.wait_bound(api, ns, names), scheduler.log()[-3000:]
    spread = max(placement.bound[n] for n in names) - min(placement.bound[n] for n in names)
    assert spread < 2.0, f"bound over {spread:.1f} s, not together"
