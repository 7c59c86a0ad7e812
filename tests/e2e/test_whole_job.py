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
and on the waiting gang (d)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
import yaml

from tests.e2e import summary
from tests.e2e.controllers import USER, ControllerManager, ControllerManagerError, control_plane
from tests.e2e.controlplane import ControlPlaneError
from tests.e2e.rest import Api
from tests.e2e.scheduler import Scheduler, make_nodes, scenario_pod
from tests.e2e.timeline import STEPS, Timeline
from tests.server.harness import REPO, Server
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations

LABEL = "scheduling.k8s.io/pod-group"
DRIVER = "gpu.example.com"
DEVICE_CLASS = "gpu.example.com"
TEMPLATE = "gpu"
CLAIM = {"name": "gpu", "resourceClaimTemplateName": TEMPLATE}
CONTROL_NS = "workload-webhook"      # the webhook's own namespace: never sent to it
SETTLE = 60.0                         # seconds for an end state (bound, allocated, generated)
UNBOUND_WINDOW = 8.0                  # seconds a gang that must not start is watched
SCHED = "/apis/scheduling.k8s.io/v1beta1/namespaces"
RESOURCE = "/apis/resource.k8s.io/v1"
POD_CLAIM_STEPS = ("created", "PodGroup", "group claim", "Pods", "claim allocated", "pod claim allocated",
                   "first bound", "bound")


def _unavailable(reason: str):
    pytest.fail(f"real component unavailable: {reason}", pytrace=False)


class Stack:
    """API server + controller manager + scheduler + the webhook (default config)."""

    def __init__(self, bin_dir: str, work):
        self.bin_dir, self.work = bin_dir, work
        self.cp = control_plane(bin_dir, work / "controlplane")
        self.kcm = ControllerManager(bin_dir, self.cp, work / "kcm")
        self.scheduler = Scheduler(bin_dir, self.cp, work)
        self.hook: Server | None = None
        self.api: Api | None = None

    def start(self) -> "Stack":
        self.cp.start()
        self.api = Api(self.cp)
        self.kcm.start()
        self.scheduler.start()
        admin = self.cp.kubeconfig("admin")
        self.hook = Server(str(self.work / "webhook"), config=None,            # the DEFAULT config: no file
                           extra=["--cluster", "kubeconfig", "--kubeconfig", admin])
        os.makedirs(self.hook.workdir, exist_ok=True)
        self.hook.start()
        wait_for(lambda: self.hook.get("/readyz")[0] == 200, 30, "the webhook's cache to sync", self.hook.log)
        with open(os.path.join(self.hook.cert_dir, "ca.crt"), "rb") as f:
            ca = f.read()
        docs = configurations(config_mod.load(None), Endpoint(ca, url=f"https://127.0.0.1:{self.hook.port}"),
                              name="workload-webhook", namespace=CONTROL_NS)
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
        probe = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": "probe", "namespace": "default"},
                 "spec": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}
        wait_for(lambda: "(DIS-2)" in self.api.call("POST", f"{SCHED}/default/podgroups?dryRun=All", probe)[1]
                 .get("message", ""), 60, "the API server to call the webhook", self.hook.log)
        self.api.must("POST", f"{RESOURCE}/deviceclasses", {
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DEVICE_CLASS},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
        return self

    def stop(self) -> None:
        for part in (self.hook, self.scheduler, self.kcm):
            if part is not None:
                part.stop()
        self.cp.stop()

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(self.cp.kubectl_cmd(*args), input=stdin, capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc

    def diagnose(self, namespace: str) -> str:
        """What a failed wait shows: the objects, the events, and the components' lines."""
        out = []
        for what, path in (("pods", f"/api/v1/namespaces/{namespace}/pods"),
                           ("podgroups", f"{SCHED}/{namespace}/podgroups"),
                           ("workloads", f"{SCHED}/{namespace}/workloads"),
                           ("resourceclaims", f"{RESOURCE}/namespaces/{namespace}/resourceclaims")):
            status, body = self.api.call("GET", path)
            for o in body.get("items") or []:
                spec, st = o.get("spec") or {}, o.get("status") or {}
                brief = {"node": spec.get("nodeName"), "group": spec.get("schedulingGroup"),
                         "claims": spec.get("resourceClaims"), "allocated": bool(st.get("allocation")),
                         "reservedFor": st.get("reservedFor"), "conditions": st.get("conditions"),
                         "claimStatuses": st.get("resourceClaimStatuses")}
                out.append(f"{what}/{o['metadata']['name']}: {json.dumps({k: v for k, v in brief.items() if v})}")
        events = self.api.call("GET", f"/api/v1/namespaces/{namespace}/events")[1].get("items") or []
        out += [f"event {e['involvedObject']['kind']}/{e['involvedObject']['name']} {e.get('reason')}: "
                f"{(e.get('message') or '')[:300]}" for e in events[-20:]]
        out.append("kube-controller-manager:\n" + (self.kcm.lines_about(namespace) or self.kcm.tail(20)))
        out.append("kube-scheduler:\n" + "\n".join(line for line in self.scheduler.log().splitlines()
                                                  if namespace in line)[-4000:])
        out.append("webhook:\n" + self.hook.log()[-3000:])
        return "\n".join(out)


def wait_for(check, timeout: float, what: str, diagnose=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (AssertionError, KeyError, OSError) as exc:
            last = exc
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}"
                         + (f" (last error: {last})" if last else "") + f"\n{diagnose()}")


@pytest.fixture(scope="module")
def stack(bin_dir, tmp_path_factory):
    s = Stack(bin_dir, tmp_path_factory.mktemp("whole-job"))
    try:
        s.start()
    except (ControlPlaneError, ControllerManagerError, RuntimeError) as exc:
        s.stop()
        _unavailable(str(exc))
    except BaseException:
        s.stop()
        raise
    yield s
    s.api.call("DELETE", f"{RESOURCE}/deviceclasses/{DEVICE_CLASS}")
    s.stop()


class Scenario:
    """One scenario's namespace, Nodes and ResourceSlices, removed afterwards."""

    def __init__(self, stack: Stack, namespace: str | None = None):
        self.stack, self.api = stack, stack.api
        self.namespace = namespace or f"whole-{uuid.uuid4().hex[:8]}"
        self.tag = self.namespace[-8:] if namespace is None else f"control-{uuid.uuid4().hex[:6]}"
        self.nodes: list[str] = []
        self.slices: list[str] = []
        if self.api.call("GET", f"/api/v1/namespaces/{self.namespace}")[0] != 200:
            self.api.must("POST", "/api/v1/namespaces", {"metadata": {"name": self.namespace}})
        # ServiceAccount admission admits no Pod before the serviceaccount-controller made `default`.
        wait_for(lambda: self.api.call("GET", f"/api/v1/namespaces/{self.namespace}/serviceaccounts/default")[0]
                 == 200, 30, f"ServiceAccount {self.namespace}/default", stack.kcm.tail)
        self.api.must("POST", f"{RESOURCE}/namespaces/{self.namespace}/resourceclaimtemplates", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": TEMPLATE},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DEVICE_CLASS}}]}}}})

    def add_nodes(self, devices: list[int], cpu: int = 4) -> list[str]:
        """One fake Node per entry, each with a ResourceSlice of that many devices (none for 0)."""
        names = make_nodes(self.api, self.tag, [{"cpu": cpu} for _ in devices])
        self.nodes += names
        for node, count in zip(names, devices):
            if count:
                self.api.must("POST", f"{RESOURCE}/resourceslices", {
                    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
                    "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                          "resourceSliceCount": 1},
                             "devices": [{"name": f"gpu-{i}"} for i in range(count)]}})
                self.slices.append(f"{node}-gpus")
        return names

    def pod(self, name: str, labels: dict | None = None, **spec) -> dict:
        return scenario_pod(name, self.tag, labels, **spec)

    def podgroup(self, name: str, min_count: int, claims: list[dict] | None = None) -> dict:
        spec = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
        if claims:
            spec["resourceClaims"] = claims
        return self.api.must("POST", f"{SCHED}/{self.namespace}/podgroups", {
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name}, "spec": spec})

    def create_pod(self, pod: dict) -> dict:
        return self.api.must("POST", f"/api/v1/namespaces/{self.namespace}/pods", pod)

    def items(self, path: str) -> list[dict]:
        return self.api.must("GET", path.format(ns=self.namespace))["items"]

    def pods(self, group: str | None = None) -> list[dict]:
        pods = self.items("/api/v1/namespaces/{ns}/pods")
        return [p for p in pods if group is None or (p["spec"].get("schedulingGroup") or {}).get("podGroupName") == group]

    def claims(self) -> list[dict]:
        return self.items(RESOURCE + "/namespaces/{ns}/resourceclaims")

    def diagnose(self) -> str:
        return self.stack.diagnose(self.namespace)

    def cleanup(self) -> None:
        api, ns = self.api, self.namespace
        # No kubelet confirms a bound Pod's deletion: delete them at once, then the namespace
        # (the namespace, garbage-collector, podgroup-protection and resourceclaim controllers
        # finish the rest: claims, PodGroups, Workloads, Jobs).
        api.call("DELETE", f"/apis/batch/v1/namespaces/{ns}/jobs?propagationPolicy=Background")
        api.call("DELETE", f"/api/v1/namespaces/{ns}/pods?gracePeriodSeconds=0")
        api.call("DELETE", f"/api/v1/namespaces/{ns}")
        for name in self.slices:
            api.call("DELETE", f"{RESOURCE}/resourceslices/{name}")
        for name in self.nodes:
            api.call("DELETE", f"/api/v1/nodes/{name}")
        wait_for(lambda: api.call("GET", f"/api/v1/namespaces/{ns}")[0] == 404, SETTLE,
                 f"namespace {ns} to be deleted", self.diagnose)


@pytest.fixture
def scenario(stack):
    s = Scenario(stack)
    yield s
    s.cleanup()


@pytest.fixture
def control(stack):
    s = Scenario(stack, CONTROL_NS)
    yield s
    s.cleanup()


# --------------------------------------------------------------------------- reading


def group_claims(claims: list[dict], group: str) -> list[dict]:
    return [c for c in claims if any(r.get("kind") == "PodGroup" and r.get("name") == group
                                     for r in c["metadata"].get("ownerReferences") or [])]


def pod_claims(claims: list[dict]) -> list[dict]:
    return [c for c in claims if any(r.get("kind") == "Pod" for r in c["metadata"].get("ownerReferences") or [])]


def allocated(claim: dict) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))


def reserved_for(claim: dict) -> list[str]:
    return [f"{r['resource']}/{r['name']}" for r in (claim.get("status") or {}).get("reservedFor") or []]


def device_node(claim: dict) -> str:
    terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    return terms[0]["matchFields"][0]["values"][0]


def _explain_argv() -> list[str]:
    """`workload-webhook explain` once webhook/cli.py registers it; until then the same
    subcommand through its own add_parser/run (the CLI's one line is the only difference)."""
    from webhook import cli
    sub = next(a for a in cli.build_parser()._actions if getattr(a, "choices", None) and "validate" in a.choices)
    if "explain" in sub.choices:
        return [sys.executable, "-m", "webhook", "explain"]
    code = ("import argparse, sys; from webhook import explain; "
            "p = argparse.ArgumentParser(prog='workload-webhook'); explain.add_parser(p.add_subparsers()); "
            "a = p.parse_args(); sys.exit(a.func(a))")
    return [sys.executable, "-c", code, "explain"]


def explain(stack: Stack, what: str, namespace: str, output: str = "text") -> tuple[str, dict | None]:
    argv = _explain_argv() + [what, "-n", namespace, "--kubeconfig", stack.cp.kubeconfig("admin"), "-o", output]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, f"explain {what} failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}"
    return proc.stdout, (json.loads(proc.stdout) if output == "json" else None)


def podgroup_node(result: dict) -> dict:
    def walk(node):
        yield node
        for child in node.get("children") or []:
            yield from walk(child)
    return next(n for n in walk(result["root"]) if n["kind"] == "PodGroup")


def prebind_retries(stack: Stack, namespace: str) -> list[str]:
    """The members the scheduler retried after PreBind found the shared claim already
    allocated by another member (the upstream waves): read from its log, never asserted."""
    pods = set()
    for line in stack.scheduler.log().splitlines():
        if "got allocated elsewhere in the meantime" in line and "Error scheduling pod; retrying" in line:
            marker = f'pod="{namespace}/'
            if marker in line:
                pods.add(line.split(marker, 1)[1].split('"', 1)[0])
    return sorted(pods)


def waves(stack: Stack, timeline: Timeline, namespace: str) -> str:
    retried = prebind_retries(stack, namespace)
    first, last = timeline.seconds("first bound"), timeline.seconds("bound")
    spread = f"first bound +{first:.2f}, last +{last:.2f} s" if first is not None and last is not None else ""
    return f"{spread}; {len(retried)} member(s) retried after PreBind 'claim … got allocated elsewhere in the meantime'"


def report(title: str, timeline: Timeline, claims_line: str, extra: str = "", steps=STEPS) -> None:
    summary.add(f"whole job {title}:")
    summary.add(f"  {timeline.line(steps)}")
    summary.add(f"  claims per group: {claims_line}" + (f"; {extra}" if extra else ""))


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
    argv = _explain_argv() + ["trainjob/llama", "-n", ns, "--kubeconfig", stack.cp.kubeconfig("admin"),
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
    assert proc.returncode == 1 and "unknown kind 'trainjob'" in proc.stderr
