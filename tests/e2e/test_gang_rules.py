"""GANG-1..3 against the real kube-scheduler (docs/rules.md "Gangs the scheduler fails as a
whole"): each refused case is first shown failing for real where the webhook is not
registered (the namespace every registration excludes: Pods join by `spec.schedulingGroup`
alone), the scheduler setting `PodGroupInitiallyScheduled=False` reason `SchedulerError` in the
words the webhook quotes; then the webhook refuses the same Pod, and the admitted case is
placed. The scheduler runs two profiles (default-scheduler, second-profile), so that Pods of
either are in its queue. PodGroupPreemptionPolicy is on in the e2e control plane: GANG-2
without the gate is proven by the unit tests only."""
import time
import uuid

import pytest

from tests.e2e.scheduler import Api, Placement, Scheduler, make_nodes, scenario_pod

LABEL = "scheduling.k8s.io/pod-group"
EXCLUDED = "workload-webhook"          # excluded by every registration (test_gang_scheduling's control)
PG = "/apis/scheduling.k8s.io/v1beta1/namespaces/{}/podgroups"
CPG = "/apis/scheduling.k8s.io/v1alpha3/namespaces/{}/compositepodgroups"
HIGH, NEVER = "gang-rules-high", "gang-rules-never"


@pytest.fixture(scope="module")
def scheduler(bin_dir, cluster, webhook, tmp_path_factory):
    s = Scheduler(bin_dir, cluster, tmp_path_factory.mktemp("scheduler"),
                  profiles=("default-scheduler", "second-profile")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def api(cluster):
    api = Api(cluster)
    for name, value, policy in ((HIGH, 1000, "PreemptLowerPriority"), (NEVER, 0, "Never")):
        status, body = api.call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "preemptionPolicy": policy})
        assert status in (201, 409), body
    return api


@pytest.fixture
def excluded(kubectl):
    kubectl("create", "namespace", EXCLUDED, check=False)
    return EXCLUDED


def gang(namespace, name, min_count=2, **spec):
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, "disruptionMode": {"single": {}},
                     **spec}}


def condition(api, namespace, group, timeout=60.0) -> dict:
    """The PodGroup's PodGroupInitiallyScheduled condition, once the scheduler set one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pg = api.must("GET", f"{PG.format(namespace)}/{group}")
        for c in (pg.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodGroupInitiallyScheduled":
                return c
        time.sleep(0.2)
    return {}


def fails_unchecked(api, scheduler, scenario, pods: list[dict], group_spec: dict) -> str:
    """Where the webhook does not look: the group and Pods (joined by spec.schedulingGroup) are
    created, the scheduler fails the whole group with SchedulerError; its message."""
    group = f"{scenario}-g"
    api.must("POST", PG.format(EXCLUDED), gang(EXCLUDED, group, len(pods), **group_spec))
    placement = Placement()
    for i, p in enumerate(pods):
        p["metadata"]["name"] = f"{scenario}-{i}"
        p["spec"]["schedulingGroup"] = {"podGroupName": group}
        placement.create(api, EXCLUDED, p)
    c = condition(api, EXCLUDED, group)
    assert c.get("status") == "False" and c.get("reason") == "SchedulerError", (c, scheduler.log()[-3000:])
    placement.poll(api, EXCLUDED)
    assert not [n for n in placement.bound if n.startswith(scenario)]
    return c["message"]


def refused(api, namespace, pod) -> dict:
    status, body = api.call("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    assert status == 422 or status == 400 or status == 403, (status, body)
    return body


def placed(api, namespace, scenario, pods: list[dict], scheduler) -> None:
    placement = Placement()
    names = []
    for i, p in enumerate(pods):
        p["metadata"]["name"] = name = f"{scenario}-ok-{i}"
        names.append(name)
        placement.create(api, namespace, p)
    assert placement.wait_bound(api, namespace, names), scheduler.log()[-3000:]


def _scenario(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_GANG_1_a_priority_other_than_the_groups(scheduler, api, namespace, excluded):
    scenario = _scenario("prio")
    make_nodes(api, scenario, [{"cpu": 4}])
    words = "all pods in a single pod group should have the same priority as the pod group's priority, got 1000 and 0"
    message = fails_unchecked(api, scheduler, scenario, [scenario_pod("", scenario),
                                                         scenario_pod("", scenario, priorityClassName=HIGH)], {})
    assert words in message, message

    api.must("POST", PG.format(namespace), gang(namespace, "train"))
    api.must("POST", f"/api/v1/namespaces/{namespace}/pods", scenario_pod("w-0", scenario, {LABEL: "train"}))
    # The Pod names only a class: the 1000 in the answer is spec.priority, which the API
    # server's Priority admission plugin set before it called the webhook.
    body = refused(api, namespace, scenario_pod("w-1", scenario, {LABEL: "train"}, priorityClassName=HIGH))
    assert words in body["message"] and "(GANG-1)" in body["message"], body
    assert "PodGroupInitiallyScheduled=False reason SchedulerError" in body["message"]

    api.must("POST", PG.format(namespace), gang(namespace, "train-high", priorityClassName=HIGH))
    placed(api, namespace, scenario, [scenario_pod("", scenario, {LABEL: "train-high"}, priorityClassName=HIGH)
                                      for _ in range(2)], scheduler)


def test_GANG_2_a_preemption_policy_other_than_the_groups(scheduler, api, namespace, excluded):
    scenario = _scenario("policy")
    make_nodes(api, scenario, [{"cpu": 4}])
    words = ("all pods in a single pod group should have the same preemption policy as the pod group's "
             "preemption policy, got Never and PreemptLowerPriority")
    message = fails_unchecked(api, scheduler, scenario, [scenario_pod("", scenario, priorityClassName=NEVER),
                                                         scenario_pod("", scenario, priorityClassName=NEVER)], {})
    assert words in message, message

    api.must("POST", PG.format(namespace), gang(namespace, "train"))
    body = refused(api, namespace, scenario_pod("w-0", scenario, {LABEL: "train"}, priorityClassName=NEVER))
    assert words in body["message"] and "(GANG-2)" in body["message"], body

    # kube-apiserver defaults a PodGroup's preemptionPolicy (PreemptLowerPriority) before its
    # Priority admission resolves the class: a class of policy Never needs the field said too.
    api.must("POST", PG.format(namespace), gang(namespace, "train-never", priorityClassName=NEVER,
                                                preemptionPolicy="Never"))
    placed(api, namespace, scenario, [scenario_pod("", scenario, {LABEL: "train-never"}, priorityClassName=NEVER)
                                      for _ in range(2)], scheduler)


def test_GANG_3_a_scheduler_other_than_the_members(scheduler, api, namespace, excluded):
    scenario = _scenario("sched")
    make_nodes(api, scenario, [{"cpu": 4}])
    message = fails_unchecked(api, scheduler, scenario, [scenario_pod("", scenario),
                                                         scenario_pod("", scenario, schedulerName="second-profile")], {})
    assert "all pods in a single pod group should have the same .spec.schedulerName set" in message, message

    api.must("POST", PG.format(namespace), gang(namespace, "train"))
    api.must("POST", f"/api/v1/namespaces/{namespace}/pods", scenario_pod("w-0", scenario, {LABEL: "train"}))
    body = refused(api, namespace, scenario_pod("w-1", scenario, {LABEL: "train"}, schedulerName="second-profile"))
    assert ("all pods in a single pod group should have the same .spec.schedulerName set, got: "
            "\"second-profile\" and \"default-scheduler\"") in body["message"] and "(GANG-3)" in body["message"], body

    api.must("POST", PG.format(namespace), gang(namespace, "train-second"))
    placed(api, namespace, scenario, [scenario_pod("", scenario, {LABEL: "train-second"},
                                                   schedulerName="second-profile") for _ in range(2)], scheduler)


def _hierarchy(api, namespace, root, leaves, **root_spec):
    ref = {"workloadName": root, "templateName": root}
    api.must("POST", CPG.format(namespace), {
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
        "metadata": {"name": root, "namespace": namespace},
        "spec": {"workloadRef": ref, "schedulingPolicy": {"gang": {"minGroupCount": len(leaves)}},
                 "disruptionMode": {"single": {}}, **root_spec}})
    for leaf in leaves:
        api.must("POST", PG.format(namespace), gang(namespace, leaf, 1, parentCompositePodGroupName=root,
                                                    workloadRef={"workloadName": root, "templateName": leaf}))


def test_GANG_1_in_a_hierarchy_the_root_composite_groups_priority(scheduler, api, namespace, excluded):
    """The leaves are created without a class (priority 0), their root CompositePodGroup with
    one (1000): the scheduler compares each Pod with the root, and so does the webhook."""
    scenario = _scenario("tree")
    make_nodes(api, scenario, [{"cpu": 4}])
    _hierarchy(api, EXCLUDED, f"{scenario}-root", [f"{scenario}-a", f"{scenario}-b"], priorityClassName=HIGH)
    for i, leaf in enumerate(("a", "b")):
        p = scenario_pod(f"{scenario}-{leaf}", scenario)
        p["spec"]["schedulingGroup"] = {"podGroupName": f"{scenario}-{leaf}"}
        api.must("POST", f"/api/v1/namespaces/{EXCLUDED}/pods", p)
    c = condition(api, EXCLUDED, f"{scenario}-a")
    assert c.get("reason") == "SchedulerError" and "got 0 and 1000" in c.get("message", ""), \
        (c, scheduler.log()[-3000:])

    _hierarchy(api, namespace, "pipeline", ["prep", "train"], priorityClassName=HIGH)
    body = refused(api, namespace, scenario_pod("prep-0", scenario, {LABEL: "prep"}))
    assert "got 0 and 1000" in body["message"] and "CompositePodGroup 'pipeline'" in body["message"], body
    placement = Placement()
    for leaf in ("prep", "train"):
        placement.create(api, namespace, scenario_pod(f"{leaf}-0", scenario, {LABEL: leaf}, priorityClassName=HIGH))
    assert placement.wait_bound(api, namespace, ["prep-0", "train-0"]), scheduler.log()[-3000:]
