"""The gang, end to end: Pods that only carry the group label go through the
webhook (which joins them to their PodGroup) and then the real kube-scheduler
places them all or nothing on fake Nodes. Each scenario prints when every Pod
was created and bound, and where (docs/testing.md "What the scheduler then
does" quotes)."""
import time

import pytest

from tests.e2e.scheduler import RACK, Api, Placement, Scheduler, make_nodes, scenario_pod

LABEL = "scheduling.k8s.io/pod-group"
UNBOUND_WINDOW = 6.0      # seconds a Pod that must not be bound is watched
REPORTS: list[str] = []


@pytest.fixture(scope="module")
def scheduler(bin_dir, cluster, webhook, tmp_path_factory):
    s = Scheduler(bin_dir, cluster, tmp_path_factory.mktemp("scheduler")).start()
    yield s
    s.stop()
    if REPORTS:
        print("\n\n" + "\n\n".join(REPORTS))


@pytest.fixture(scope="module")
def api(cluster):
    return Api(cluster)


def podgroup(namespace, name, min_count=None, **spec):
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": policy, "disruptionMode": {"single": {}}, **spec}}


def create_group(api, namespace, group):
    api.must("POST", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{namespace}/podgroups", group)


def _explain(scheduler, placement):
    return f"bound: {placement.node}\nscheduler log tail:\n{scheduler.log()[-3000:]}"


def test_labelled_pods_are_joined_and_placed_all_together(scheduler, api, namespace):
    scenario = f"gang-{namespace[-6:]}"
    make_nodes(api, scenario, [{"cpu": 2}, {"cpu": 2}])
    create_group(api, namespace, podgroup(namespace, "train", 4))
    placement, t0 = Placement(), time.monotonic()
    for i in range(3):
        out = placement.create(api, namespace, scenario_pod(f"worker-{i}", scenario, {LABEL: "train"}))
        assert out["spec"]["schedulingGroup"] == {"podGroupName": "train"}      # the webhook joined it
    assert placement.stay_unbound(api, namespace, UNBOUND_WINDOW) == [], _explain(scheduler, placement)
    placement.create(api, namespace, scenario_pod("worker-3", scenario, {LABEL: "train"}))
    names = [f"worker-{i}" for i in range(4)]
    assert placement.wait_bound(api, namespace, names), _explain(scheduler, placement)
    spread = max(placement.bound[n] for n in names) - min(placement.bound[n] for n in names)
    assert spread < 2.0, f"bound over {spread:.1f} s, not together"
    REPORTS.append(placement.report("gang of 4 (minCount 4), three Pods first, then the fourth", t0))


def test_without_the_webhook_the_same_pods_are_placed_one_by_one(scheduler, api, kubectl):
    """Control: in a namespace the webhook never sees, labelled Pods do not join
    the group and the scheduler binds the first three alone."""
    namespace = "workload-webhook"                      # excluded by every registration
    kubectl("create", "namespace", namespace, check=False)
    scenario = f"control-{int(time.time()) % 100000}"
    make_nodes(api, scenario, [{"cpu": 2}, {"cpu": 2}])
    create_group(api, namespace, podgroup(namespace, f"train-{scenario}", 4))
    placement, t0 = Placement(), time.monotonic()
    names = [f"{scenario}-{i}" for i in range(3)]
    for name in names:
        out = placement.create(api, namespace, scenario_pod(name, scenario, {LABEL: f"train-{scenario}"}))
        assert "schedulingGroup" not in out["spec"]
    assert placement.wait_bound(api, namespace, names), _explain(scheduler, placement)
    REPORTS.append(placement.report("control, webhook off: 3 labelled Pods of a minCount-4 group", t0))


def test_capacity_for_part_of_the_group_binds_none(scheduler, api, namespace):
    scenario = f"partial-{namespace[-6:]}"
    make_nodes(api, scenario, [{"cpu": 2}])               # room for 2 of 4
    create_group(api, namespace, podgroup(namespace, "train", 4))
    placement, t0 = Placement(), time.monotonic()
    for i in range(4):
        placement.create(api, namespace, scenario_pod(f"worker-{i}", scenario, {LABEL: "train"}))
    assert placement.stay_unbound(api, namespace, UNBOUND_WINDOW * 1.5) == [], _explain(scheduler, placement)
    REPORTS.append(placement.report("gang of 4 with room for 2: none bound", t0))


def test_topology_constraint_puts_the_gang_in_one_rack(scheduler, api, namespace):
    scenario = f"rack-{namespace[-6:]}"
    # Two racks of two 2-CPU nodes: the gang of 4 fits in either rack, and the
    # default spreading would use both.
    make_nodes(api, scenario, [{"cpu": 2, "rack": "rack-a"}, {"cpu": 2, "rack": "rack-b"},
                               {"cpu": 2, "rack": "rack-a"}, {"cpu": 2, "rack": "rack-b"}])
    create_group(api, namespace, podgroup(namespace, "train", 4,
                                          schedulingConstraints={"topology": [{"key": RACK}]}))
    placement, t0 = Placement(), time.monotonic()
    names = [f"worker-{i}" for i in range(4)]
    for name in names:
        placement.create(api, namespace, scenario_pod(name, scenario, {LABEL: "train"}))
    assert placement.wait_bound(api, namespace, names), _explain(scheduler, placement)
    racks = {api.must("GET", f"/api/v1/nodes/{placement.node[n]}")["metadata"]["labels"][RACK] for n in names}
    assert len(racks) == 1, (racks, placement.node)
    REPORTS.append(placement.report(f"gang of 4 constrained to one {RACK}: all in {racks.pop()}", t0))


def test_basic_policy_pods_are_placed_individually(scheduler, api, namespace):
    scenario = f"basic-{namespace[-6:]}"
    make_nodes(api, scenario, [{"cpu": 4}])
    create_group(api, namespace, podgroup(namespace, "serve"))
    placement, t0 = Placement(), time.monotonic()
    placement.create(api, namespace, scenario_pod("replica-0", scenario, {LABEL: "serve"}))
    assert placement.wait_bound(api, namespace, ["replica-0"]), _explain(scheduler, placement)
    placement.create(api, namespace, scenario_pod("replica-1", scenario, {LABEL: "serve"}))
    assert placement.wait_bound(api, namespace, ["replica-1"]), _explain(scheduler, placement)
    REPORTS.append(placement.report("basic policy: each Pod bound on its own", t0))


def test_composite_group_waits_for_min_group_count_children(scheduler, api, namespace):
    """A CompositePodGroup with minGroupCount 2 over two gangs of 2: the first
    gang complete is not enough; both together are bound at once."""
    scenario = f"composite-{namespace[-6:]}"
    make_nodes(api, scenario, [{"cpu": 2}, {"cpu": 2}])
    ref = {"workloadName": "pipeline", "templateName": "stages"}
    api.must("POST", f"/apis/scheduling.k8s.io/v1alpha3/namespaces/{namespace}/compositepodgroups", {
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
        "metadata": {"name": "stages", "namespace": namespace},
        "spec": {"workloadRef": ref, "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                 "disruptionMode": {"single": {}}}})
    for child in ("prep", "train"):
        create_group(api, namespace, podgroup(namespace, child, 2, parentCompositePodGroupName="stages",
                                              workloadRef={"workloadName": "pipeline", "templateName": child}))
    placement, t0 = Placement(), time.monotonic()
    for i in range(2):
        placement.create(api, namespace, scenario_pod(f"prep-{i}", scenario, {LABEL: "prep"}))
    assert placement.stay_unbound(api, namespace, UNBOUND_WINDOW) == [], _explain(scheduler, placement)
    for i in range(2):
        placement.create(api, namespace, scenario_pod(f"train-{i}", scenario, {LABEL: "train"}))
    names = ["prep-0", "prep-1", "train-0", "train-1"]
    assert placement.wait_bound(api, namespace, names), _explain(scheduler, placement)
    REPORTS.append(placement.report("CompositePodGroup minGroupCount 2 over two gangs of 2", t0))
