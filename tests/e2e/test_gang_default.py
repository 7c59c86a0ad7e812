"""Gang by default (DEF-2, `gangByDefault`), proven with the real Job controller: a real
kube-apiserver (gate WorkloadWithJob on, as every e2e API server: DEFAULT_FEATURE_GATES),
kube-controller-manager (the job controller among the Job path's controllers,
tests/e2e/controllers.py), kube-scheduler 1.37.2 on fake Nodes, and this webhook served
for real with a config that opts in the namespaces labelled `GANG_LABEL: "on"`,
registered as `webhook-configs` would register it.

(a) In an opted-in namespace a Job of parallelism 3 with no spec.scheduling is stored
    with `schedulingPolicy.gang.minCount: 3` (and `disruptionMode.single`); the Job
    controller compiles it into a gang Workload and PodGroup of 3 and creates the Pods;
    with room for 2 none is bound, and once a third fits all 3 are.
(b) The same Job in a namespace not opted in is stored untouched: the Job controller's
    PodGroup is basic, and the 2 that fit are bound alone.
(c) In the opted-in namespace, what the user set is kept: `basic: {}` (the opt-out),
    a gang of 2, and a Job of parallelism 1 are stored as sent (dry run)."""
from __future__ import annotations

import os
import uuid

import pytest
import yaml

from tests.e2e import summary
from tests.e2e.rest import Api
from tests.e2e.scheduler import SCENARIO_LABEL, Placement, make_nodes
from tests.e2e.whole_job import CONTROL_NS, SCHED, SETTLE, UNBOUND_WINDOW, Scenario, Stack, started, wait_for
from tests.server.harness import Server
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations

GANG_LABEL = "e2e.workload-webhook/gang"
CONFIG = {"gangByDefault": {"enabled": True, "namespaceSelector": {"matchLabels": {GANG_LABEL: "on"}}}}
JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"
GANG_OF_3 = {"schedulingPolicy": {"gang": {"minCount": 3}}, "disruptionMode": {"single": {}}}


class GangStack(Stack):
    """The whole-job stack, with the webhook served on a config that opts namespaces in."""

    def start(self) -> "GangStack":
        self.cp.start()
        self.api = Api(self.cp)
        self.kcm.start()
        self.scheduler.start()
        os.makedirs(self.work / "webhook", exist_ok=True)
        path = self.work / "webhook" / "config.yaml"
        path.write_text(yaml.safe_dump(CONFIG))
        self.hook = Server(str(self.work / "webhook"), config=str(path),
                           extra=["--cluster", "kubeconfig", "--kubeconfig", self.cp.kubeconfig("admin")])
        self.hook.start()
        wait_for(lambda: self.hook.get("/readyz")[0] == 200, 30, "the webhook's cache to sync", self.hook.log)
        with open(os.path.join(self.hook.cert_dir, "ca.crt"), "rb") as f:
            ca = f.read()
        docs = configurations(config_mod.load(path), Endpoint(ca, url=f"https://127.0.0.1:{self.hook.port}"),
                              name="workload-webhook", namespace=CONTROL_NS)
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
        return self


@pytest.fixture(scope="module")
def stack(bin_dir, tmp_path_factory):
    s = started(GangStack(bin_dir, tmp_path_factory.mktemp("gang-default")))
    yield s
    s.stop()


def _scenario(stack: GangStack, opted_in: bool) -> Scenario:
    name = f"gang-{'on' if opted_in else 'off'}-{uuid.uuid4().hex[:6]}"
    labels = {GANG_LABEL: "on"} if opted_in else {}
    stack.api.must("POST", "/api/v1/namespaces", {"metadata": {"name": name, "labels": labels}})
    return Scenario(stack, name)


@pytest.fixture
def opted_in(stack):
    s = _scenario(stack, True)
    # The API server calls the webhook once it has read the configuration: wait until a dry run is defaulted.
    wait_for(lambda: "scheduling" in stack.api.call("POST", JOBS.format(ns=s.namespace) + "?dryRun=All",
                                                    job(s, "probe"))[1].get("spec", {}),
             60, "the API server to send the opted-in namespace's Jobs to the webhook", s.diagnose)
    yield s
    s.cleanup()


@pytest.fixture
def not_opted_in(stack):
    s = _scenario(stack, False)
    yield s
    s.cleanup()


def job(scenario: Scenario, name: str, parallelism: int = 3, **spec) -> dict:
    template = scenario.pod("worker")["spec"]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"parallelism": parallelism, "completions": parallelism, **spec,
                     "template": {"spec": {**template, "restartPolicy": "Never"}}}}


def add_node(scenario: Scenario, cpu: int) -> str:
    """One more Node in the scenario (its Pods select the scenario's label)."""
    [name] = make_nodes(scenario.api, f"{scenario.tag}-more", [{"cpu": cpu}])
    scenario.api.must("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"labels": {SCENARIO_LABEL: scenario.tag}}},
                      "application/merge-patch+json")
    scenario.nodes.append(name)
    return name


def bound(scenario: Scenario) -> list[str]:
    return sorted(p["metadata"]["name"] for p in scenario.pods() if p["spec"].get("nodeName"))


def only(scenario: Scenario, path: str) -> dict:
    items = scenario.items(path)
    assert len(items) == 1, [i["metadata"]["name"] for i in items]
    return items[0]


def test_DEF_2_a_job_of_three_is_stored_as_a_gang_and_placed_all_or_nothing(stack, opted_in):
    s, ns = opted_in, opted_in.namespace
    s.add_nodes([0], cpu=2)                                     # room for 2 of the 3 (1 CPU each)
    created = s.api.must("POST", JOBS.format(ns=ns), job(s, "train"))
    assert created["spec"]["scheduling"] == GANG_OF_3                              # defaulted at CREATE
    assert s.api.must("GET", JOBS.format(ns=ns) + "/train")["spec"]["scheduling"] == GANG_OF_3   # and stored so
    wait_for(lambda: len(s.pods()) == 3, SETTLE, "the Job controller's three Pods", s.diagnose)
    workload = only(s, SCHED + "/{ns}/workloads")
    pg = only(s, SCHED + "/{ns}/podgroups")
    assert workload["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "train"}
    assert [t["schedulingPolicy"] for t in workload["spec"]["podGroupTemplates"]] == [{"gang": {"minCount": 3}}]
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert pg["spec"]["disruptionMode"] == {"single": {}}
    assert pg["spec"]["workloadRef"]["workloadName"] == workload["metadata"]["name"]
    group = pg["metadata"]["name"]
    assert {(p["spec"].get("schedulingGroup") or {}).get("podGroupName") for p in s.pods()} == {group}

    placement = Placement()
    assert placement.stay_unbound(s.api, ns, UNBOUND_WINDOW) == [], s.diagnose()  # 2 fit: none bound
    add_node(s, cpu=1)                                                             # the third fits now
    names = sorted(p["metadata"]["name"] for p in s.pods())
    assert placement.wait_bound(s.api, ns, names, SETTLE), s.diagnose()
    assert bound(s) == names
    summary.add(f"gang by default (DEF-2): Job parallelism 3 stored with gang minCount 3; PodGroup {group} "
                f"gang 3; none of 3 bound on room for 2 for {UNBOUND_WINDOW:.0f} s, all 3 bound once the third fit")


def test_DEF_2_the_same_job_in_a_namespace_not_opted_in_is_untouched(stack, not_opted_in):
    s, ns = not_opted_in, not_opted_in.namespace
    s.add_nodes([0], cpu=2)
    created = s.api.must("POST", JOBS.format(ns=ns), job(s, "train"))
    assert "scheduling" not in created["spec"]
    assert "scheduling" not in s.api.must("GET", JOBS.format(ns=ns) + "/train")["spec"]
    wait_for(lambda: len(bound(s)) == 2, SETTLE, "two of the three Pods bound alone", s.diagnose)
    pg = only(s, SCHED + "/{ns}/podgroups")
    assert pg["spec"]["schedulingPolicy"] == {"basic": {}}                          # the Job controller's default
    assert len(s.pods()) == 3
    summary.add("gang by default (DEF-2), namespace not opted in: Job stored without spec.scheduling, PodGroup "
                "basic, 2 of 3 bound on room for 2")


@pytest.mark.parametrize("name,parallelism,scheduling", [
    ("opt-out", 3, {"schedulingPolicy": {"basic": {}}}),
    ("gang-of-2", 3, {"schedulingPolicy": {"gang": {"minCount": 2}}}),
    ("one-pod", 1, None),
])
def test_DEF_2_what_the_user_set_is_stored_as_sent(stack, opted_in, name, parallelism, scheduling):
    body = job(opted_in, name, parallelism, **({"scheduling": scheduling} if scheduling else {}))
    stored = opted_in.api.must("POST", JOBS.format(ns=opted_in.namespace) + "?dryRun=All", body)
    assert stored["spec"].get("scheduling") == scheduling
