"""The whole job, end to end, with nothing faked but the Nodes: a real
kube-apiserver (its own, ServiceAccount admission on), kube-controller-manager
(job, resourceclaim, garbage-collector, podgroup-protection, serviceaccount and
namespace controllers, each with its own ServiceAccount: tests/e2e/controllers.py),
kube-scheduler 1.37.2 and this webhook served with its DEFAULT configuration (no
config file: the gates it judges core objects with are read from the API server),
registered as `webhook-configs` would. Nodes are API objects with hand-published
ResourceSlices (resource.k8s.io/v1), one DeviceClass, a ResourceClaimTemplate per
namespace.

(a) Pods that carry only the group label: the webhook adds schedulingGroup and exact
    copies of the group's claims; ONE claim is generated for the PodGroup, allocated
    once, reserved for the PodGroup; all four bind on the node that holds the device.
(b) A batch/v1 Job with spec.scheduling (gang 4, a claim; WorkloadWithJob): the Job
    controller makes the Workload, the PodGroup (preemptionPolicy defaulted by the
    API server and admitted by the default config) and the Pods; the webhook injects
    the claims; one claim for the group; all four bound.
(c) Without the webhook (a namespace it never sees): no claim entry -> bound, no
    device, the group's claim unallocated; an entry that differs by name -> four
    per-Pod claims, the group's claim unallocated.
(d) A gang of four, each Pod with a claim of its own, three devices: none bound,
    nothing allocated.

Each scenario prints its timeline (created -> Workload -> PodGroup -> Pods -> claim
allocated -> bound, seconds, from watches) and its claims per group in pytest's
terminal summary. The scheduler binds a gang that shares a claim in waves (the
first member writes the allocation, the others fail PreBind once and are retried
1.4-1.9 s later): the tests wait for the end state and assert no timing.
`workload-webhook explain` is run on a running gang (a, b), on the controls (c)
and on the waiting gang (d). The stack and the scenarios: tests/e2e/whole_job.py."""
from __future__ import annotations

import json
import os
import subprocess
import time

import yaml

from tests.e2e import summary
from tests.e2e.controllers import USER
from tests.e2e.timeline import Timeline
from tests.server.harness import REPO

from tests.e2e.whole_job import (CLAIM, DRIVER, LABEL, POD_CLAIM_STEPS, SCHED, SETTLE, TEMPLATE, UNBOUND_WINDOW,
                                  Scenario, explain_argv, allocated, device_node, explain, group_claims, pod_claims,
                                  podgroup_node, report, reserved_for, wait_for, waves)
from tests.e2e.whole_job import control, scenario, stack  # noqa: F401  (the fixtures)


# --------------------------------------------------------------------------- (a)


def test_a_label_joined_gang_shares_one_claim(stack, scenario):
    holder = scenario.add_nodes([0, 1])[1]           # two Nodes with room for all four; one device, on the second
    timeline = Timeline(stack.cp, scenario.namespace, pods=4).start()
    try:
        timeline.mark("created")
        scenario.podgroup("train", 4, [CLAIM])
        for i in range(4):
            out = scenario.create_pod(scenario.pod(f"worker-{i}", {LABEL: "train"}))
            assert out["spec"]["schedulingGroup"] == {"podGroupName": "train"}        # the webhook joined it
            assert out["spec"]["resourceClaims"] == [CLAIM]                           # an exact copy of the group's
        wait_for(lambda: len([p for p in scenario.pods("train") if p["spec"].get("nodeName")]) == 4, SETTLE,
                 "all four members bound", scenario.diagnose)
        wait_for(lambda: any(allocated(c) for c in group_claims(scenario.claims(), "train")), SETTLE,
                 "the group's claim allocated", scenario.diagnose)
    finally:
        timeline.stop()
    claims = scenario.claims()
    mine = group_claims(claims, "train")
    assert len(claims) == len(mine) == 1, [c["metadata"]["name"] for c in claims]      # ONE claim, the group's
    assert reserved_for(mine[0]) == ["podgroups/train"]                                 # allocated once, for the group
    assert device_node(mine[0]) == holder
    assert {p["spec"]["nodeName"] for p in scenario.pods("train")} == {holder}          # where the device is
    report("(a) four Pods with only the group label, gang 4, one claim", timeline,
           f"train: 1 ({mine[0]['metadata']['name']}, allocated on {holder}, reserved for podgroups/train); "
           "per-Pod claims 0", f"all four on {holder}; waves: {waves(stack, timeline, scenario.namespace)}")

    text, _ = explain(stack, "podgroup/train", scenario.namespace)
    _, data = explain(stack, "podgroup/train", scenario.namespace, "json")
    node = podgroup_node(data)
    assert node["members"]["joined"] == node["members"]["bound"] == 4 and node["members"]["pending"] == 0
    assert node["state"] == "running: 4 bound"
    [claim] = node["claims"]
    assert claim["allocated"] and claim["reservedFor"] == ["podgroups/train"] and len(claim["sharedBy"]) == 4
    assert "state: running: 4 bound" in text and "members: 4 joined · 4 bound · 0 pending" in text
    assert f"→ ResourceClaim {mine[0]['metadata']['name']}: allocated {DRIVER}/{holder}/gpu-0 on {holder}" in text
    assert "shared by 4 of 4 members" in text
    summary.add("  explain podgroup/train (running):\n" + "\n".join("    " + l for l in text.splitlines()))


# --------------------------------------------------------------------------- (b)


def job(scenario: Scenario, name: str, parallelism: int = 4) -> dict:
    template = scenario.pod("worker")
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"parallelism": parallelism, "completions": parallelism,
                     "scheduling": {"schedulingPolicy": {"gang": {"minCount": parallelism}}, "resourceClaims": [CLAIM]},
                     "template": {"spec": {**template["spec"], "restartPolicy": "Never"}}}}


def test_b_job_controller_gang_shares_one_claim(stack, scenario):
    holder = scenario.add_nodes([0, 1])[1]
    ns = scenario.namespace
    timeline = Timeline(stack.cp, ns, pods=4).start()
    try:
        body = job(scenario, "train")
        assert "resourceClaims" not in body["spec"]["template"]["spec"]        # the pod template has no claim
        timeline.mark("created")
        scenario.api.must("POST", f"/apis/batch/v1/namespaces/{ns}/jobs", body)
        wait_for(lambda: len(scenario.pods()) == 4 and all(p["spec"].get("nodeName") for p in scenario.pods()),
                 SETTLE, "the Job's four Pods bound", scenario.diagnose)
        wait_for(lambda: any(allocated(c) for c in scenario.claims()), SETTLE, "the group's claim allocated",
                 scenario.diagnose)
    finally:
        timeline.stop()
    [workload] = scenario.items(SCHED + "/{ns}/workloads")
    [pg] = scenario.items(SCHED + "/{ns}/podgroups")
    group = pg["metadata"]["name"]
    assert workload["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "train"}
    assert pg["spec"]["workloadRef"]["workloadName"] == workload["metadata"]["name"]
    assert pg["spec"]["resourceClaims"] == [CLAIM]
    # Issue point 2: the API server defaulted preemptionPolicy (PodGroupPreemptionPolicy on) on the Job
    # controller's PodGroup, and the default config, judging with the cluster's gates, admitted it.
    assert pg["spec"].get("preemptionPolicy") == "PreemptLowerPriority"
    assert "feature gates from the API server" in stack.hook.log() and "PodGroupPreemptionPolicy=on" in stack.hook.log()
    # Least privilege: the manager's own identity may not create Pods or PodGroups; the Job's exist,
    # so the job-controller made them with its own ServiceAccount (--use-service-account-credentials).
    for verb_resource in ("pods", "podgroups.scheduling.k8s.io", "workloads.scheduling.k8s.io"):
        own = stack.kubectl("auth", "can-i", "create", verb_resource, "-n", ns, "--as", USER, check=False)
        sa = stack.kubectl("auth", "can-i", "create", verb_resource, "-n", ns,
                           "--as", "system:serviceaccount:kube-system:job-controller", check=False)
        assert (own.stdout.strip(), sa.stdout.strip()) == ("no", "yes"), (verb_resource, own.stdout, sa.stdout)
    pods = scenario.pods()
    for p in pods:
        assert p["spec"]["schedulingGroup"] == {"podGroupName": group}          # the Job controller's
        assert p["spec"]["resourceClaims"] == [CLAIM]                           # the webhook's exact copy
    claims = scenario.claims()
    mine = group_claims(claims, group)
    assert len(claims) == len(mine) == 1, [c["metadata"]["name"] for c in claims]
    assert reserved_for(mine[0]) == [f"podgroups/{group}"]
    assert {p["spec"]["nodeName"] for p in pods} == {holder} == {device_node(mine[0])}
    report("(b) batch/v1 Job, spec.scheduling gang 4 + a claim, pod template without claims", timeline,
           f"{group}: 1 (allocated on {holder}, reserved for the PodGroup); per-Pod claims 0",
           f"all four on {holder}; waves: {waves(stack, timeline, ns)}; PodGroup preemptionPolicy "
           f"{pg['spec']['preemptionPolicy']} admitted by the default config")

    text, _ = explain(stack, "job/train", ns)
    _, data = explain(stack, "job/train", ns, "json")
    root = data["root"]
    assert root["kind"] == "Job" and root.get("asked") and root["children"][0]["kind"] == "Workload"
    node = podgroup_node(data)
    assert node["name"] == group and node["members"]["bound"] == 4 and node["members"]["pending"] == 0
    assert node["claims"][0]["allocated"] and len(node["claims"][0]["sharedBy"]) == 4
    assert node["addedAtAdmission"] == [{"field": "spec.resourceClaims[gpu]", "pods": sorted(p["metadata"]["name"]
                                                                                            for p in pods)}]
    assert f"Workload {workload['metadata']['name']}" in text and f"PodGroup {group}" in text
    assert "created by job-controller (kube-controller-manager)" in text
    assert "added at admission (not in the owner's pod template): spec.resourceClaims[gpu] on 4 Pods" in text
    summary.add("  explain job/train (running):\n" + "\n".join("    " + l for l in text.splitlines()))


# --------------------------------------------------------------------------- (c)


def test_c_without_the_webhook_no_entry_means_no_device_and_a_differing_entry_a_claim_each(stack, control):
    """In the namespace the webhook never sees, Pods name the group themselves."""
    ns = control.namespace
    # no claim entry: their Node has one device, never used; differing entry: four devices, one per Pod
    node_none, node_four = control.add_nodes([1, 4])
    timeline = Timeline(stack.cp, ns, pods=8).start()
    try:
        timeline.mark("created")
        control.podgroup("no-entry", 4, [CLAIM])
        control.podgroup("differs", 4, [CLAIM])
        for i in range(4):
            out = control.create_pod(control.pod(f"no-entry-{i}", {LABEL: "no-entry"},
                                                 schedulingGroup={"podGroupName": "no-entry"},
                                                 nodeSelector={"kubernetes.io/hostname": node_none,
                                                               "e2e.workload-webhook/scenario": control.tag}))
            assert "resourceClaims" not in out["spec"]                       # nothing injected
        for i in range(4):
            out = control.create_pod(control.pod(f"differs-{i}", {LABEL: "differs"},
                                                 schedulingGroup={"podGroupName": "differs"},
                                                 resourceClaims=[{"name": "gpus", "resourceClaimTemplateName": TEMPLATE}],
                                                 nodeSelector={"kubernetes.io/hostname": node_four,
                                                               "e2e.workload-webhook/scenario": control.tag}))
            assert out["spec"]["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": TEMPLATE}]
        wait_for(lambda: all(p["spec"].get("nodeName") for p in control.pods()) and len(control.pods()) == 8,
                 SETTLE, "all eight Pods bound", control.diagnose)
        wait_for(lambda: len(pod_claims(control.claims())) == 4 and all(allocated(c) for c in pod_claims(
            control.claims())), SETTLE, "four per-Pod claims allocated", control.diagnose)
        wait_for(lambda: len(group_claims(control.claims(), "no-entry")) == 1
                 and len(group_claims(control.claims(), "differs")) == 1, SETTLE, "both group claims generated",
                 control.diagnose)
    finally:
        timeline.stop()
    claims = control.claims()
    for group in ("no-entry", "differs"):
        [gc] = group_claims(claims, group)
        assert not allocated(gc) and reserved_for(gc) == [], gc.get("status")    # generated, silently unallocated
    own = pod_claims(claims)
    assert sorted(reserved_for(c)[0] for c in own) == [f"pods/differs-{i}" for i in range(4)]
    assert {p["spec"]["nodeName"] for p in control.pods("no-entry")} == {node_none}
    report("(c) controls without the webhook: 4 Pods with no claim entry, 4 with an entry that differs by name",
           timeline, "no-entry: 1 (never allocated; Pods bound without a device); differs: 1 (never allocated) "
           "+ 4 per-Pod claims (allocated, one device each)", steps=POD_CLAIM_STEPS)

    _, data = explain(stack, "podgroup/differs", ns, "json")
    node = podgroup_node(data)
    [claim] = node["claims"]
    assert not claim["allocated"] and claim["sharedBy"] == [] and len(claim["perPodInstead"]) == 4
    assert "stays unallocated, silently" in claim["note"]
    assert len(node["podClaims"]) == 4 and all(c["allocated"] for c in node["podClaims"])
    text, _ = explain(stack, "podgroup/no-entry", ns)
    assert "not allocated" in text and "no member references it exactly: it stays unallocated, silently" in text


# --------------------------------------------------------------------------- (d)


def test_d_gang_of_four_with_three_devices_binds_none(stack, scenario):
    scenario.add_nodes([0, 3])                      # room for four Pods everywhere; three devices in all
    ns = scenario.namespace
    own = {"name": "gpu", "resourceClaimTemplateName": TEMPLATE}
    timeline = Timeline(stack.cp, ns, pods=4).start()
    try:
        timeline.mark("created")
        scenario.podgroup("train", 4)               # a gang without a group claim: each Pod asks for its own device
        for i in range(4):
            out = scenario.create_pod(scenario.pod(f"worker-{i}", {LABEL: "train"}, resourceClaims=[own]))
            assert out["spec"]["schedulingGroup"] == {"podGroupName": "train"}
        def tried() -> bool:
            pg = scenario.api.must("GET", f"{SCHED}/{ns}/podgroups/train")
            return any(c["type"] == "PodGroupInitiallyScheduled" and c["status"] == "False"
                       for c in (pg.get("status") or {}).get("conditions") or [])
        wait_for(tried, SETTLE, "the scheduler to find the gang unschedulable", scenario.diagnose)
        deadline = time.monotonic() + UNBOUND_WINDOW
        while time.monotonic() < deadline:
            assert not [p for p in scenario.pods() if p["spec"].get("nodeName")], scenario.diagnose()
            assert not [c for c in scenario.claims() if allocated(c)], scenario.diagnose()
            time.sleep(0.5)
    finally:
        timeline.stop()
    assert len(pod_claims(scenario.claims())) == 4
    report("(d) gang of 4, a device per Pod, three devices", timeline,
           "train: 0; per-Pod claims 4 (none allocated)", "none bound after the scheduler's verdict "
           f"+{UNBOUND_WINDOW:.0f} s", steps=POD_CLAIM_STEPS)

    text, _ = explain(stack, "podgroup/train", ns)
    _, data = explain(stack, "podgroup/train", ns, "json")
    node = podgroup_node(data)
    assert node["members"] == {**node["members"], "joined": 4, "bound": 0, "pending": 4}
    assert node["state"] == "waiting for the scheduler: 4 of 4 pending"
    assert "minCount (4) cannot be satisfied" in node["scheduling"]["reason"]
    assert len(node["podClaims"]) == 4 and not any(c["allocated"] for c in node["podClaims"])
    assert "members: 4 joined · 0 bound · 4 pending" in text
    assert "reason: Unschedulable: " in text and "minCount (4) cannot be satisfied" in text
    assert "per-Pod claims: 4 (0 allocated)" in text
    summary.add("  explain podgroup/train (waiting):\n" + "\n".join("    " + l for l in text.splitlines()))


# --------------------------------------------------------------------------- a target object


def test_e_explain_starts_at_a_configured_target_object(stack, scenario, tmp_path):
    """A custom resource that owns its Workload (spec.controllerRef): explain reads it
    through the config's target and draws the tree from it."""
    stack.kubectl("apply", "-f", os.path.join(REPO, "examples", "crds", "trainjob.yaml"))
    stack.kubectl("wait", "--for=condition=Established", "crd/trainjobs.training.example.com", "--timeout=60s")
    ns = scenario.namespace
    scenario.add_nodes([0])
    tj = scenario.api.must("POST", f"/apis/training.example.com/v1alpha1/namespaces/{ns}/trainjobs", {
        "apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "metadata": {"name": "llama"},
        "spec": {"replicas": 2, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}})
    owner = [{"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "name": "llama",
              "uid": tj["metadata"]["uid"], "controller": True}]
    scenario.api.must("POST", f"{SCHED}/{ns}/workloads", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"name": "llama", "ownerReferences": owner},
        "spec": {"controllerRef": {"apiGroup": "training.example.com", "kind": "TrainJob", "name": "llama"},
                 "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]}})
    scenario.api.must("POST", f"{SCHED}/{ns}/podgroups", {
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "llama-workers",
                                                                                    "ownerReferences": owner},
        "spec": {"workloadRef": {"workloadName": "llama", "templateName": "workers"},
                 "schedulingPolicy": {"gang": {"minCount": 2}}}})
    for i in range(2):
        scenario.create_pod(scenario.pod(f"llama-{i}", {LABEL: "llama-workers"}))
    wait_for(lambda: len([p for p in scenario.pods("llama-workers") if p["spec"].get("nodeName")]) == 2, SETTLE,
             "both members bound", scenario.diagnose)
    cfg = tmp_path / "explain.yaml"
    cfg.write_text(yaml.safe_dump({"targets": [{"group": "training.example.com", "kind": "TrainJob",
                                                "versions": ["v1alpha1"],
                                                "groups": [{"schedulingPolicy": "spec.scheduling.schedulingPolicy",
                                                            "size": "spec.replicas"}]}]}))
    argv = explain_argv() + ["trainjob/llama", "-n", ns, "--kubeconfig", stack.cp.kubeconfig("admin"),
                              "--config", str(cfg), "-o", "json"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    root = json.loads(proc.stdout)["root"]
    assert (root["kind"], root["name"], root.get("asked")) == ("TrainJob", "llama", True)
    [wl] = root["children"]
    [pg] = wl["children"]
    assert (wl["kind"], pg["kind"], pg["name"]) == ("Workload", "PodGroup", "llama-workers")
    assert pg["members"]["bound"] == 2 and pg["state"] == "running: 2 bound"
    # Without the target in the config, the kind is unknown: a usage problem, said as such.
    proc = subprocess.run(argv[:-4] + ["-o", "json"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 2 and "unknown kind 'trainjob'" in proc.stderr
