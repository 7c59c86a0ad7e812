"""The harness of the whole-job end-to-end test (tests/e2e/test_whole_job.py): its
own kube-apiserver with ServiceAccount admission, kube-controller-manager,
kube-scheduler and the webhook on its default configuration (`Stack`); one
scenario's namespace, fake Nodes and ResourceSlices (`Scenario`); and what the
tests read back (claims, `explain`, the scheduler's PreBind retries)."""
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
from tests.e2e.controllers import ControllerManager, ControllerManagerError, control_plane
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


def started(s: "Stack") -> "Stack":
    """`s` started for a module's fixture; what fails to start is stopped and said as unavailable."""
    try:
        s.start()
    except (ControlPlaneError, ControllerManagerError, RuntimeError) as exc:
        s.stop()
        _unavailable(str(exc))
    except BaseException:
        s.stop()
        raise
    return s


@pytest.fixture(scope="module")
def stack(bin_dir, tmp_path_factory):
    s = started(Stack(bin_dir, tmp_path_factory.mktemp("whole-job")))
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


def explain_argv() -> list[str]:
    """`workload-webhook explain` once webhook/cli.py registers it; until then the same
    subcommand through its own add_parser/run (the CLI's one line is the only difference)."""
    from webhook import cli
    sub = next(a for a in cli.build_parser()._actions if getattr(a, "choices", None) and "validate" in a.choices)
    if "explain" in sub.choices:
        return [sys.executable, "-m", "webhook", "explain"]
    code = ("import argparse, sys; from webhook.commands import explain; "
            "p = argparse.ArgumentParser(prog='workload-webhook'); explain.add_parser(p.add_subparsers()); "
            "a = p.parse_args(); sys.exit(a.func(a))")
    return [sys.executable, "-c", code, "explain"]


def explain(stack: Stack, what: str, namespace: str, output: str = "text") -> tuple[str, dict | None]:
    argv = explain_argv() + [what, "-n", namespace, "--kubeconfig", stack.cp.kubeconfig("admin"), "-o", output]
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
