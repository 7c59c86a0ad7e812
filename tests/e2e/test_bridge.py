"""The bridge (issue 31) against real components: its own kube-apiserver, the
kube-controller-manager's job, garbage-collector and podgroup-protection controllers,
kube-scheduler 1.37.2 on fake Nodes, the foreign CRDs (tests/e2e/data: restated from
scheduler-plugins and Volcano, with their sources) and two `workload-webhook serve`
replicas with the bridge on, competing for its Lease. No Coscheduling plugin and no
Volcano scheduler runs anywhere.

- the mirror: made, owned, labelled, following minMember; an in-tree PodGroup it did
  not make left alone; deleted with its owner (the garbage collector) and made again
  for a new object of the same name;
- the create warnings (kubectl prints them) and the Events;
- a Volcano gang of four from a real Deployment, handed from `schedulerName: volcano` to the
  default scheduler: none bound while three fit, all four once the fourth fits; the
  Volcano status Inqueue, Unschedulable, then Running and Scheduled;
- Pods before their mirror: joined by name, gang-scheduled once it exists;
- `explain` and `audit` on them;
- one writer: only the Lease's holder writes; when it stops, the other takes over, and
  a restarted replica lists everything again (resync).

The same on a real kubelet with the chart: tests/e2e/test_bridge_node.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
import yaml

from tests.e2e.controllers import ControllerManager, ControllerManagerError, control_plane
from tests.e2e.controlplane import ControlPlaneError
from tests.e2e.rest import Api
from tests.e2e.test_registration import _wait as wait
from tests.e2e.scheduler import Placement, Scheduler, make_nodes, scenario_pod
from tests.server.harness import REPO, Server
from webhook import config as config_mod
from webhook.foreign.dialects import BRIDGE_LABEL
from webhook.cluster.api import BRIDGE as BRIDGE_MANAGER
from webhook.registration import Endpoint, configurations

DATA = os.path.join(REPO, "tests", "e2e", "data")
CRDS = ("coscheduling-podgroup-crd.yaml", "volcano-podgroup-crd.yaml")
COS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"
VOL = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
PG = "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups"
LEASE_NS = "workload-webhook"
BRIDGE = {"coscheduling": True, "volcano": True, "schedulerNames": ["volcano", "scheduler-plugins-scheduler"],
          "lease": {"namespace": LEASE_NS, "name": "bridge", "durationSeconds": 6}, "resyncSeconds": 10}
SETTLE = 60.0
UNBOUND_WINDOW = 8.0
CONTROLLERS = ("deployment-controller", "replicaset-controller", "garbage-collector-controller",
               "podgroup-protection-controller", "serviceaccount-controller", "namespace-controller")


def wait_for(check, what: str, timeout: float = SETTLE, diagnose=lambda: ""):
    return wait(check, timeout, what, diagnose)


class BridgeStack:
    def __init__(self, bin_dir, work):
        self.work = work
        self.cp = control_plane(bin_dir, work / "controlplane")
        self.kcm = ControllerManager(bin_dir, self.cp, work / "kcm", controllers=CONTROLLERS)
        self.scheduler = Scheduler(bin_dir, self.cp, work)
        self.config = work / "bridge.yaml"
        self.replicas: dict[str, Server] = {}

    def start(self) -> "BridgeStack":
        self.cp.start()
        self.api = Api(self.cp)
        self.kcm.start()
        self.scheduler.start()
        for crd in CRDS:
            self.kubectl("apply", "-f", os.path.join(DATA, crd))
        self.kubectl("wait", "--for=condition=Established", "crd/podgroups.scheduling.x-k8s.io",
                     "crd/podgroups.scheduling.volcano.sh", "--timeout=60s")
        self.kubectl("create", "namespace", LEASE_NS)
        self.config.write_text(yaml.safe_dump({"bridge": BRIDGE}))
        for name in ("a", "b"):
            self.replicas[name] = self.replica(name).start()
        with open(os.path.join(self.replicas["a"].cert_dir, "ca.crt"), "rb") as f:
            ca = f.read()
        docs = configurations(config_mod.load(str(self.config)),
                              Endpoint(ca, url=f"https://127.0.0.1:{self.replicas['a'].port}"),
                              name="workload-webhook", namespace=LEASE_NS)
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
        probe = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": "probe", "namespace": "default"},
                 "spec": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}
        wait_for(lambda: "(DIS-2)" in self.api.call("POST", PG.format(ns="default") + "?dryRun=All", probe)[1]
                 .get("message", ""), "the API server to call the webhook")
        return self

    def replica(self, name: str, port: int | None = None) -> Server:
        server = Server(str(self.work / f"replica-{name}"), config=str(self.config), workers=1,
                        extra=["--cluster", "kubeconfig", "--kubeconfig", self.cp.kubeconfig("admin")])
        os.makedirs(server.workdir, exist_ok=True)
        if port:
            server.port, server.port_fixed = port, True
            server.args[server.args.index("--port") + 1] = str(port)
        return server

    def stop(self) -> None:
        for server in self.replicas.values():
            server.stop()
        for part in (self.scheduler, self.kcm):
            part.stop()
        self.cp.stop()

    def kubectl(self, *args, stdin=None, check=True) -> subprocess.CompletedProcess:
        proc = subprocess.run(self.cp.kubectl_cmd(*args), input=stdin, capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc

    def cli(self, *args) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "webhook", *args, "--kubeconfig", self.cp.kubeconfig("admin")],
                              capture_output=True, text=True, timeout=120, cwd=REPO)

    def holder(self) -> str | None:
        status, lease = self.api.call("GET", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/bridge")
        holder = (lease.get("spec") or {}).get("holderIdentity") if status == 200 else None
        return next((n for n, s in self.replicas.items() if holder and f"candidate {holder} for Lease" in s.log()),
                    None)

    def diagnose(self, ns: str) -> str:
        out = []
        for what, path in (("coscheduling", COS), ("volcano", VOL), ("podgroups", PG)):
            for o in self.api.call("GET", path.format(ns=ns))[1].get("items") or []:
                out.append(f"{what}/{o['metadata']['name']}: spec={json.dumps(o.get('spec'))} "
                           f"status={json.dumps(o.get('status'))[:400]} owners={o['metadata'].get('ownerReferences')}")
        for p in self.api.call("GET", f"/api/v1/namespaces/{ns}/pods")[1].get("items") or []:
            out.append(f"pod/{p['metadata']['name']}: node={p['spec'].get('nodeName')} "
                       f"group={p['spec'].get('schedulingGroup')} scheduler={p['spec'].get('schedulerName')}")
        for e in self.api.call("GET", f"/api/v1/namespaces/{ns}/events")[1].get("items") or []:
            out.append(f"event {e['involvedObject']['kind']}/{e['involvedObject']['name']} {e.get('reason')}: "
                       f"{(e.get('message') or '')[:300]}")
        for name, s in self.replicas.items():
            out.append(f"--- replica {name} (holder: {self.holder()}):\n{s.log()[-2500:]}")
        out.append("--- kube-scheduler:\n" + "\n".join(line for line in self.scheduler.log().splitlines()
                                                      if ns in line)[-3000:])
        return "\n".join(out)


@pytest.fixture(scope="module")
def stack(bin_dir, tmp_path_factory):
    s = BridgeStack(bin_dir, tmp_path_factory.mktemp("bridge"))
    try:
        s.start()
    except (ControlPlaneError, ControllerManagerError, RuntimeError) as exc:
        s.stop()
        pytest.fail(f"real component unavailable: {exc}", pytrace=False)
    except BaseException:
        s.stop()
        raise
    yield s
    s.stop()


@pytest.fixture
def ns(stack):
    name = f"brg-{uuid.uuid4().hex[:6]}"
    stack.api.must("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": name}})
    wait_for(lambda: stack.api.call("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200,
             "the default ServiceAccount")
    return name


def coscheduling(name, min_member, owner=None, **spec):
    meta = {"name": name}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": meta,
            "spec": {"minMember": min_member, **spec}}


def volcano(name, min_member, owner=None, **spec):
    obj = coscheduling(name, min_member, owner, **spec)
    # as KubeRay and the Spark operator create them: with status.phase Pending (no status subresource)
    return {**obj, "apiVersion": "scheduling.volcano.sh/v1beta1", "status": {"phase": "Pending"}}


def mirror(stack, ns, name):
    status, obj = stack.api.call("GET", PG.format(ns=ns) + f"/{name}")
    return obj if status == 200 else None


def events(stack, ns, name):
    return {(e.get("reason"), e.get("message")) for e in stack.api.call("GET", f"/api/v1/namespaces/{ns}/events")[1]
            .get("items") or [] if e["involvedObject"].get("name") == name
            and e["involvedObject"].get("apiVersion", "").startswith("scheduling.")}


def min_count(obj):
    return ((((obj or {}).get("spec") or {}).get("schedulingPolicy") or {}).get("gang") or {}).get("minCount")


# ----------------------------------------------------------------------------- the mirror


def test_BRG_5_a_coscheduling_podgroup_is_mirrored_owned_and_followed(stack, ns):
    made = stack.api.must("POST", COS.format(ns=ns), coscheduling("train", 3))
    m = wait_for(lambda: mirror(stack, ns, "train"), "the mirror", diagnose=lambda: stack.diagnose(ns))
    assert min_count(m) == 3
    assert m["metadata"]["labels"] == {BRIDGE_LABEL: "coscheduling"}
    assert m["metadata"]["ownerReferences"] == [{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                                 "name": "train", "uid": made["metadata"]["uid"], "controller": True}]
    stack.api.must("PATCH", COS.format(ns=ns) + "/train", {"spec": {"minMember": 5}}, "application/merge-patch+json")
    wait_for(lambda: min_count(mirror(stack, ns, "train")) == 5, "minCount to follow minMember",
             diagnose=lambda: stack.diagnose(ns))
    assert ("Mirrored", f"mirrored as the in-tree PodGroup {ns}/train (gang minCount 3)") in events(stack, ns, "train")


def managers(obj) -> set[str]:
    return {m.get("manager") for m in (obj or {}).get("metadata", {}).get("managedFields") or []}


def test_the_bridge_writes_as_its_own_field_manager(stack, ns):
    """The mirror, the foreign object's status, the Lease and the Events name `workload-webhook-bridge`
    in managedFields (never the client library's `OpenAPI-Generator`), and `explain` says so."""
    stack.api.must("POST", COS.format(ns=ns), coscheduling("managed", 2))
    m = wait_for(lambda: (o := mirror(stack, ns, "managed")) and BRIDGE_MANAGER in managers(o) and o,
                 "the mirror, written by the bridge", diagnose=lambda: stack.diagnose(ns))
    entry = next(e for e in m["metadata"]["managedFields"] if e["manager"] == BRIDGE_MANAGER)
    assert "f:spec" in entry["fieldsV1"] and "f:ownerReferences" in entry["fieldsV1"]["f:metadata"]
    foreign = wait_for(lambda: (o := stack.api.must("GET", COS.format(ns=ns) + "/managed"))
                       and (o.get("status") or {}).get("phase") and o, "the status written back",
                       diagnose=lambda: stack.diagnose(ns))
    assert BRIDGE_MANAGER in managers(foreign)
    lease = stack.api.must("GET", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/bridge")
    events_of = wait_for(lambda: [e for e in stack.api.must("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
                                  ["items"] if e["regarding"].get("name") == "managed"], "the bridge's Event",
                         diagnose=lambda: stack.diagnose(ns))
    assert all(managers(e) == {BRIDGE_MANAGER} for e in events_of), events_of
    for obj in (m, foreign, lease, *events_of):
        assert BRIDGE_MANAGER in managers(obj) and "OpenAPI-Generator" not in managers(obj), obj["metadata"]
    said = stack.cli("explain", "podgroup/managed", "-n", ns, "-o", "json")
    assert said.returncode == 0, said.stderr
    assert BRIDGE_MANAGER in said.stdout and "OpenAPI-Generator" not in said.stdout, said.stdout


def test_BRG_1_kubectl_prints_the_create_warnings_and_an_event_records_them(stack, ns):
    proc = stack.kubectl("create", "-n", ns, "-f", "-", stdin=yaml.safe_dump(
        volcano("queued", 2, queue="gpu", minTaskMember={"worker": 2})))
    assert "Warning: spec.queue: not mirrored: no queues: kube-scheduler orders groups by priority (BRG-1)" \
        in proc.stderr, proc.stderr
    assert "Warning: spec.minTaskMember: not mirrored" in proc.stderr
    said = wait_for(lambda: [m for r, m in events(stack, ns, "queued") if r == "NotMirrored"], "the NotMirrored event",
                    diagnose=lambda: stack.diagnose(ns))
    assert "spec.queue" in said[0] and "spec.minTaskMember" in said[0]


def test_BRG_5_an_in_tree_podgroup_the_bridge_did_not_create_is_left_alone(stack, ns):
    mine = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "mine"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    before = stack.api.must("POST", PG.format(ns=ns), mine)
    stack.api.must("POST", COS.format(ns=ns), coscheduling("mine", 6))
    wait_for(lambda: any(r == "MirrorConflict" for r, _ in events(stack, ns, "mine")), "the conflict event",
             diagnose=lambda: stack.diagnose(ns))
    after = mirror(stack, ns, "mine")
    assert min_count(after) == 2 and after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert {r for r, _ in events(stack, ns, "mine")} == {"MirrorConflict"}           # nothing claimed "Mirrored"
    assert "ownerReferences" not in after["metadata"] and "labels" not in after["metadata"]


def test_BRG_5_the_mirror_goes_with_its_owner_and_comes_back_for_a_new_one(stack, ns):
    first = stack.api.must("POST", COS.format(ns=ns), coscheduling("again", 2))
    old = wait_for(lambda: mirror(stack, ns, "again"), "the first mirror", diagnose=lambda: stack.diagnose(ns))
    stack.api.must("DELETE", COS.format(ns=ns) + "/again")
    wait_for(lambda: mirror(stack, ns, "again") is None, "the garbage collector to delete the mirror",
             diagnose=lambda: stack.diagnose(ns))
    second = stack.api.must("POST", COS.format(ns=ns), coscheduling("again", 7))
    new = wait_for(lambda: mirror(stack, ns, "again"), "the second mirror", diagnose=lambda: stack.diagnose(ns))
    assert new["metadata"]["uid"] != old["metadata"]["uid"] and min_count(new) == 7
    assert new["metadata"]["ownerReferences"][0]["uid"] == second["metadata"]["uid"] != first["metadata"]["uid"]


def test_BRG_5_an_object_created_again_at_once_replaces_the_mirror_of_the_earlier_one(stack, ns):
    """Deleted and created again before the garbage collector ran: the bridge deletes the
    stale mirror itself and makes a new one."""
    stack.api.must("POST", COS.format(ns=ns), coscheduling("quick", 2))
    wait_for(lambda: mirror(stack, ns, "quick"), "the first mirror", diagnose=lambda: stack.diagnose(ns))
    stack.api.must("DELETE", COS.format(ns=ns) + "/quick")
    second = stack.api.must("POST", COS.format(ns=ns), coscheduling("quick", 3))
    wait_for(lambda: (mirror(stack, ns, "quick") or {}).get("metadata", {}).get("ownerReferences", [{}])[0]
             .get("uid") == second["metadata"]["uid"], "a mirror owned by the new object",
             diagnose=lambda: stack.diagnose(ns))
    assert min_count(mirror(stack, ns, "quick")) == 3


# ----------------------------------------------------------------------------- gangs


def deployment(name, ns, scenario, pod_meta, replicas=4, scheduler=None):
    """A Deployment whose Pods carry a foreign key, as a job controller's would."""
    spec = dict(scenario_pod("x", scenario)["spec"])
    if scheduler:
        spec["schedulerName"] = scheduler
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {**pod_meta, "labels": {**labels, **pod_meta.get("labels", {})}},
                                  "spec": spec}}}


def app_pods(stack, ns, name):
    return stack.api.must("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=app%3D{name}")["items"]


def test_BRG_6_a_volcano_gang_of_a_deployment_binds_none_while_three_fit_then_all_four(stack, ns):
    scenario = f"vol-{ns[-6:]}"
    make_nodes(stack.api, scenario, [{"cpu": 3}])
    made = stack.api.must("POST", f"/apis/apps/v1/namespaces/{ns}/deployments",
                          deployment("train", ns, scenario, {"annotations": {"scheduling.k8s.io/group-name": "train"}},
                                     scheduler="volcano"))
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "train", "uid": made["metadata"]["uid"],
             "controller": True}
    stack.api.must("POST", VOL.format(ns=ns), volcano("train", 4, owner))
    pods = wait_for(lambda: len(app_pods(stack, ns, "train")) == 4 and app_pods(stack, ns, "train"),
                    "the Deployment's four Pods", diagnose=lambda: stack.diagnose(ns))
    for p in pods:
        assert p["spec"]["schedulingGroup"] == {"podGroupName": "train"}            # joined (BRG-3)
        assert p["spec"]["schedulerName"] == "default-scheduler"                     # handed over (BRG-4)
        assert p["metadata"]["labels"][BRIDGE_LABEL] == "volcano"
    placement = Placement()
    assert placement.stay_unbound(stack.api, ns, UNBOUND_WINDOW) == [], stack.diagnose(ns)
    waiting = stack.api.must("GET", VOL.format(ns=ns) + "/train")["status"]
    assert waiting["phase"] == "Inqueue", waiting                          # never Pending: controllers go on
    wait_for(lambda: any(c.get("type") == "Unschedulable" for c in stack.api.must(
        "GET", VOL.format(ns=ns) + "/train")["status"].get("conditions") or []),
        "the Unschedulable condition from the in-tree one", diagnose=lambda: stack.diagnose(ns))
    make_nodes(stack.api, scenario + "-more", [{"cpu": 1}])
    stack.api.must("PATCH", f"/api/v1/nodes/{scenario}-more-0", {"metadata": {"labels": {
        "e2e.workload-webhook/scenario": scenario}}}, "application/merge-patch+json")
    assert placement.wait_bound(stack.api, ns, [p["metadata"]["name"] for p in pods], SETTLE), stack.diagnose(ns)
    status = wait_for(lambda: (s := stack.api.must("GET", VOL.format(ns=ns) + "/train")["status"])["phase"] ==
                      "Running" and s, "phase Running", diagnose=lambda: stack.diagnose(ns))
    assert [c["type"] for c in status["conditions"]] == ["Scheduled"]

    text = stack.cli("explain", "podgroups.scheduling.volcano.sh/train", "-n", ns, "--color", "never")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("PodGroup.scheduling.volcano.sh train"), text.stdout   # its owner is not read
    assert "PodGroup.scheduling.volcano.sh train · Volcano · minMember 4 · (asked)" in text.stdout
    assert "mirror: the in-tree PodGroup train (gang minCount 4), made by the bridge" in text.stdout
    assert "members: 4 joined · 4 bound · 0 pending" in text.stdout
    audit = stack.cli("audit", "-o", "json", "--config", str(stack.config))
    report = json.loads(audit.stdout)["bridge"]
    assert {"dialect": "volcano", "namespace": ns, "name": "train", "owner": "Deployment/train", "mirrored": True,
            "phase": "Running", "bridged": True} in report["dependents"], audit.stdout


def test_BRG_2_pods_before_their_mirror_join_by_name_and_are_gang_scheduled_once_it_exists(stack, ns):
    scenario = f"early-{ns[-6:]}"
    make_nodes(stack.api, scenario, [{"cpu": 2}])
    names = ["w0", "w1"]
    for n in names:
        pod = scenario_pod(n, scenario, {"scheduling.x-k8s.io/pod-group": "early"},
                           schedulerName="scheduler-plugins-scheduler")
        proc = stack.kubectl("create", "-n", ns, "-f", "-", stdin=yaml.safe_dump(pod))
        assert "no mirror of Coscheduling PodGroup 'early' yet; the Pod waits for it (BRG-2)" in proc.stderr
    placement = Placement()
    assert placement.stay_unbound(stack.api, ns, 3.0) == []                    # no group yet: nobody is placed
    stack.api.must("POST", COS.format(ns=ns), coscheduling("early", 2))
    assert placement.wait_bound(stack.api, ns, names, SETTLE), stack.diagnose(ns)
    status = wait_for(lambda: (s := stack.api.must("GET", COS.format(ns=ns) + "/early").get("status") or {})
                      .get("phase") == "Scheduling" and s, "phase Scheduling (bound, not running: no kubelet)",
                      diagnose=lambda: stack.diagnose(ns))
    assert status["running"] == 0


# ----------------------------------------------------------------------------- one writer, resync


def test_only_the_lease_holder_writes_and_the_other_takes_over_when_it_stops(stack, ns):
    holder = wait_for(stack.holder, "a replica to hold the Lease", diagnose=lambda: stack.diagnose(ns))
    other = "b" if holder == "a" else "a"
    assert "holds Lease" in stack.replicas[holder].log() and "holds Lease" not in stack.replicas[other].log()
    assert "mirrored" not in stack.replicas[other].log()       # every group so far: the holder's work
    port = stack.replicas[holder].port
    stack.replicas[holder].stop()                        # SIGTERM: it gives the Lease up
    wait_for(lambda: stack.holder() == other, "the other replica to take the Lease", timeout=30,
             diagnose=lambda: stack.diagnose(ns))
    stack.replicas[holder] = stack.replica(holder, port).start()     # (replica a answers the API server)
    stack.api.must("POST", COS.format(ns=ns), coscheduling("after", 2))
    wait_for(lambda: mirror(stack, ns, "after"), "the new holder to mirror", diagnose=lambda: stack.diagnose(ns))
    assert f"mirrored Coscheduling PodGroup {ns}/after" in stack.replicas[other].log()
    assert f"PodGroup {ns}/after" not in stack.replicas[holder].log() and stack.holder() == other


def test_a_restarted_bridge_lists_everything_again(stack, ns):
    stack.api.must("POST", COS.format(ns=ns), coscheduling("kept", 2))
    wait_for(lambda: mirror(stack, ns, "kept"), "the mirror", diagnose=lambda: stack.diagnose(ns))
    ports = {name: s.port for name, s in stack.replicas.items()}
    for s in stack.replicas.values():
        s.stop()
    stack.api.must("PATCH", COS.format(ns=ns) + "/kept", {"spec": {"minMember": 4}}, "application/merge-patch+json")
    stack.api.must("POST", COS.format(ns=ns), coscheduling("while-down", 3))
    time.sleep(1.0)
    assert mirror(stack, ns, "while-down") is None and min_count(mirror(stack, ns, "kept")) == 2
    for name in ("a", "b"):
        stack.replicas[name] = stack.replica(name, ports[name]).start()
    wait_for(lambda: min_count(mirror(stack, ns, "while-down")) == 3 and min_count(mirror(stack, ns, "kept")) == 4,
             "the restarted bridge to resync", diagnose=lambda: stack.diagnose(ns))
