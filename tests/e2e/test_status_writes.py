"""The webhook is down and its registration stays (failurePolicy Fail for objects): the
status writes of running gangs still go through the real API server, because no status
subresource is sent to the webhook (kube-apiserver validates them itself). The writers
are the real ones: kube-scheduler writes a gang's PodGroupInitiallyScheduled condition,
the ResourceClaim controller (kube-controller-manager) generates a PodGroup's claim and
writes `status.resourceClaimStatuses`. An object write is still refused.

Its own control plane (ServiceAccount admission on, as in test_whole_job.py), so the
controller never touches the other tests' PodGroups."""
from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from tests.e2e.controllers import ControllerManager, ControllerManagerError, control_plane
from tests.e2e.controlplane import ControlPlaneError
from tests.e2e.rest import Api
from tests.e2e.scheduler import Scheduler, make_nodes, scenario_pod
from tests.e2e.test_registration import _wait as wait_for
from tests.server.harness import Server
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations

NS = "status-writes"
LABEL = "scheduling.k8s.io/pod-group"
PODGROUPS = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{NS}/podgroups"
SETTLE = 60.0


def _unavailable(reason: str):
    pytest.fail(f"real component unavailable: {reason}", pytrace=False)


def podgroup(name: str, policy: dict, **spec) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": policy, "disruptionMode": {"single": {}}, **spec}}


@pytest.fixture(scope="module")
def stack(bin_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("status-writes")
    cp = control_plane(bin_dir, work / "controlplane")
    parts: list = []
    try:
        cp.start()
    except ControlPlaneError as exc:
        _unavailable(f"control plane did not start: {exc}")
    try:
        hook = Server(str(work / "webhook"), config=None,            # the default config
                      extra=["--cluster", "kubeconfig", "--kubeconfig", cp.kubeconfig("admin")])
        os.makedirs(hook.workdir, exist_ok=True)
        parts.append(hook.start())
        wait_for(lambda: hook.get("/readyz")[0] == 200, 30, "the webhook's cache to sync", hook.log)
        with open(os.path.join(hook.cert_dir, "ca.crt"), "rb") as f:
            docs = configurations(config_mod.load(None), Endpoint(f.read(), url=f"https://127.0.0.1:{hook.port}"))
        subprocess.run(cp.kubectl_cmd("apply", "-f", "-"), input=yaml.safe_dump_all(docs), text=True, check=True,
                       capture_output=True, timeout=60)
        yield {"cp": cp, "api": Api(cp), "hook": hook, "work": work, "parts": parts}
    finally:
        for part in reversed(parts):
            part.stop()
        cp.stop()


def test_status_writes_of_running_gangs_go_through_while_the_webhook_is_down(stack, bin_dir):
    api, hook, work = stack["api"], stack["hook"], stack["work"]
    probe = podgroup("probe", {"basic": {}}, disruptionMode={"all": {}})
    wait_for(lambda: "(DIS-2)" in api.call("POST", "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
                                                   "?dryRun=All", probe)[1].get("message", ""),
             60, "the API server to call the webhook", hook.log)

    # While the webhook serves: the objects of two gangs, as their controllers would make them.
    api.must("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    api.must("POST", f"/api/v1/namespaces/{NS}/serviceaccounts",          # no serviceaccount controller runs
             {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    api.must("POST", f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "gpu"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}})
    api.must("POST", PODGROUPS, podgroup("claims", {"basic": {}},
                                         resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu"}]))
    make_nodes(api, "status", [{"cpu": 4}])
    api.must("POST", PODGROUPS, podgroup("gang", {"gang": {"minCount": 2}}))
    for i in range(2):                   # 3 CPUs each, one 4-CPU node: the gang cannot fit
        out = api.must("POST", f"/api/v1/namespaces/{NS}/pods",
                       scenario_pod(f"worker-{i}", "status", {LABEL: "gang"}, cpu="3"))
        assert out["spec"]["schedulingGroup"] == {"podGroupName": "gang"}     # joined by the webhook

    hook.stop()                          # its Pods are gone; the registration stays (Fail)
    status, body = api.call("POST", PODGROUPS, podgroup("while-down", {"basic": {}}))
    assert status >= 500 and "failed calling webhook" in body.get("message", ""), (status, body)

    # The real writers of PodGroup status start now, with the webhook down.
    try:
        kcm = ControllerManager(bin_dir, stack["cp"], work / "kcm", controllers=("resourceclaim-controller",)).start()
    except ControllerManagerError as exc:
        _unavailable(str(exc))
    stack["parts"].append(kcm)
    scheduler = Scheduler(bin_dir, stack["cp"], work).start()
    stack["parts"].append(scheduler)

    def diagnose() -> str:
        pgs = api.must("GET", PODGROUPS)["items"]
        return "\n".join([*(f"podgroup/{p['metadata']['name']}: {p.get('status')}" for p in pgs),
                          "kube-controller-manager:\n" + kcm.tail(30),
                          "kube-scheduler:\n" + "\n".join(scheduler.log().splitlines()[-30:]),
                          "kube-apiserver (webhook lines):\n" + "\n".join(
                              line for line in open(stack["cp"].apiserver_log, errors="replace")
                              if "workload-webhook" in line)[-3000:]])

    def claim_statuses():
        return (api.must("GET", f"{PODGROUPS}/claims").get("status") or {}).get("resourceClaimStatuses")
    statuses = wait_for(claim_statuses, SETTLE, "the ResourceClaim controller to write the claim status", diagnose)
    assert [s["name"] for s in statuses] == ["gpu"] and statuses[0]["resourceClaimName"]
    claim = api.must("GET", f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims/{statuses[0]['resourceClaimName']}")
    assert claim["metadata"]["ownerReferences"][0]["name"] == "claims"

    def unschedulable():
        conditions = (api.must("GET", f"{PODGROUPS}/gang").get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "PodGroupInitiallyScheduled" and c["status"] == "False"),
                    None)
    condition = wait_for(unschedulable, SETTLE, "kube-scheduler to write the PodGroup's condition", diagnose)
    assert condition["reason"] == "Unschedulable"

    # Object writes are still refused: the webhook's rules fail closed where they protect something.
    status, body = api.call("POST", PODGROUPS, podgroup("still-down", {"basic": {}}))
    assert status >= 500 and "failed calling webhook" in body.get("message", ""), (status, body)
    assert hook.proc.poll() is not None            # it never came back
