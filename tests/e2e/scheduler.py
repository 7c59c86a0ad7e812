"""A real kube-scheduler (built by hack/build-control-plane.sh) against the e2e
API server, and fake Nodes for it: plain API objects with capacity, a Ready
condition and rack/zone labels. No kubelet runs; the scheduler binds Pods to
these Nodes and nothing starts the containers.

Every scenario's Nodes carry the taint `e2e.workload-webhook/scheduler` and a
label of their own, and its Pods tolerate the one and select the other: Pods
left Pending by other tests never land on them, and scenarios never share
capacity."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.rest import Api

TAINT = "e2e.workload-webhook/scheduler"
SCENARIO_LABEL = "e2e.workload-webhook/scenario"
RACK = "topology.kubernetes.io/rack"
ZONE = "topology.kubernetes.io/zone"
GPU = "example.com/gpu"


class Scheduler:
    """kube-scheduler on loopback: no leader election, no serving port, the API
    server's feature gates, its log at -v=2 (names each pod group decision)."""

    def __init__(self, bin_dir: str, cluster, work_dir: Path, profiles: tuple[str, ...] = ()):
        """`profiles`: scheduler names of a KubeSchedulerConfiguration's profiles (default
        plugins each), instead of the one default profile."""
        self.binary = os.path.join(bin_dir, "kube-scheduler")
        self.cluster, self.log_path = cluster, Path(work_dir) / "kube-scheduler.log"
        self.profiles, self.config_path = profiles, Path(work_dir) / "kube-scheduler.yaml"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Scheduler":
        if not os.access(self.binary, os.X_OK):
            raise RuntimeError(f"{self.binary} is missing: hack/build-control-plane.sh builds it")
        gates = ",".join(f"{k}={'true' if v else 'false'}" for k, v in self.cluster.feature_gates.items())
        args = [self.binary, f"--kubeconfig={self.cluster.kubeconfig('admin')}", "--leader-elect=false",
                "--secure-port=0", f"--feature-gates={gates}", "-v=2"]
        if self.profiles:        # with --config the deprecated flags (--kubeconfig, --leader-elect) are ignored
            self.config_path.write_text(json.dumps({
                "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                "clientConnection": {"kubeconfig": self.cluster.kubeconfig("admin")},
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": name} for name in self.profiles]}))
            args = [self.binary, f"--config={self.config_path}", "--secure-port=0", f"--feature-gates={gates}", "-v=2"]
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kube-scheduler exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            if "Caches populated" in self.log() or "Attempting to acquire" in self.log() or \
                    "Starting Kubernetes Scheduler" in self.log():
                time.sleep(1.0)
                return self
            time.sleep(0.2)
        raise RuntimeError(f"kube-scheduler did not start:\n{self.log()[-3000:]}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        if getattr(self, "_log", None):
            self._log.close()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def make_nodes(api: Api, scenario: str, specs: list[dict]) -> list[str]:
    """Nodes `<scenario>-<i>` from specs {cpu, memory, gpu, rack, zone}: created,
    status patched to Ready with capacity, the not-ready taint replaced by ours."""
    names = []
    for i, spec in enumerate(specs):
        name = f"{scenario}-{i}"
        labels = {SCENARIO_LABEL: scenario, "kubernetes.io/hostname": name}
        if spec.get("rack"):
            labels[RACK] = spec["rack"]
        if spec.get("zone"):
            labels[ZONE] = spec["zone"]
        api.must("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
                                                                                           "labels": labels}})
        capacity = {"cpu": str(spec.get("cpu", 4)), "memory": spec.get("memory", "16Gi"), "pods": "110"}
        if spec.get("gpu"):
            capacity[GPU] = str(spec["gpu"])
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        api.must("PATCH", f"/api/v1/nodes/{name}/status", {"status": {
            "capacity": capacity, "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fake node",
                            "lastHeartbeatTime": now, "lastTransitionTime": now}]}},
            "application/merge-patch+json")
        api.must("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": [
            {"key": TAINT, "value": "only", "effect": "NoSchedule"}]}}, "application/merge-patch+json")
        names.append(name)
    return names


def scenario_pod(name: str, scenario: str, labels: dict | None = None, cpu: str = "1", gpu: int = 0,
                 **spec) -> dict:
    resources = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    if gpu:
        resources["requests"][GPU] = str(gpu)
        resources["limits"] = {GPU: str(gpu)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"nodeSelector": {SCENARIO_LABEL: scenario},
                     "tolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "trainer", "image": "registry.example/trainer:1", "resources": resources}],
                     **spec}}


@dataclass
class Placement:
    """When each Pod was created and bound, and where."""
    created: dict[str, float] = field(default_factory=dict)
    bound: dict[str, float] = field(default_factory=dict)
    node: dict[str, str] = field(default_factory=dict)

    def create(self, api: Api, namespace: str, pod: dict) -> dict:
        out = api.must("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        self.created[pod["metadata"]["name"]] = time.monotonic()
        return out

    def poll(self, api: Api, namespace: str) -> None:
        pods = api.must("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
        now = time.monotonic()
        for p in pods:
            name, node = p["metadata"]["name"], p["spec"].get("nodeName")
            if node and name not in self.bound:
                self.bound[name], self.node[name] = now, node

    def wait_bound(self, api: Api, namespace: str, names: list[str], timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll(api, namespace)
            if all(n in self.bound for n in names):
                return True
            time.sleep(0.1)
        return False

    def stay_unbound(self, api: Api, namespace: str, seconds: float) -> list[str]:
        """Watch for `seconds`; the Pods that got bound meanwhile."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.poll(api, namespace)
            time.sleep(0.2)
        return sorted(self.bound)

    def report(self, scenario: str, t0: float) -> str:
        lines = [f"{scenario}:"]
        for name in sorted(self.created):
            bound = self.bound.get(name)
            where = f"bound at +{bound - t0:5.2f} s on {self.node[name]}" if bound else "not bound"
            lines.append(f"  {name:<12} created +{self.created[name] - t0:5.2f} s, {where}")
        return "\n".join(lines)
