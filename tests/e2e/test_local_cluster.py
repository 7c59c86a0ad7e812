"""The kind cluster of docs/local-cluster.md (examples/kind/cluster.yaml), checked with the real
1.37 components, since kind itself cannot run here: the flags kind derives from the file (as
its kubeadm config template writes them: pkg/cluster/internal/kubeadm/config.go, `featureGates`
sorted by name as Name=true|false to kube-apiserver, kube-scheduler and kube-controller-manager,
`runtimeConfig` sorted by key as key=value to kube-apiserver) are given to the binaries
hack/build-control-plane.sh built. Each must come up reporting every gate on in its own
`kubernetes_feature_enabled` metric, the API server must serve the scheduling APIs, and a
misspelt gate or API version must stop them."""
from __future__ import annotations

import os
import re
import ssl
import subprocess
import time
import urllib.request

import pytest
import yaml

from tests.e2e.controlplane import (DEFAULT_FEATURE_GATES, DEFAULT_RUNTIME_CONFIG, LOOPBACK, ControlPlane,
                                    ControlPlaneError, free_ports)
from tests.server.harness import REPO
from webhook.cluster.gates import from_metrics

KIND_CONFIG = os.path.join(REPO, "examples", "kind", "cluster.yaml")
COMPONENTS = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")
#: The controllers that read the gates (the job controller: WorkloadWithJob; the resource claim
#: controller: GenericWorkload, DRAWorkloadResourceClaims).
CONTROLLERS = "job-controller,resourceclaim-controller"


def kind_config() -> dict:
    with open(KIND_CONFIG, encoding="utf-8") as f:
        return yaml.safe_load(f)


def kind_flags(config: dict) -> dict[str, list[str]]:
    """Each control-plane component's flags from kind's config, as kind writes them."""
    gates = config.get("featureGates") or {}
    if any(not isinstance(v, bool) for v in gates.values()):
        raise ValueError(f"featureGates values must be booleans (kind's map[string]bool): {gates}")
    runtime = config.get("runtimeConfig") or {}
    if any(not isinstance(v, str) for v in runtime.values()):
        raise ValueError(f"runtimeConfig values must be strings (kind's map[string]string): {runtime}")
    gate_flags = [f"--feature-gates={','.join(f'{k}={str(gates[k]).lower()}' for k in sorted(gates))}"] if gates else []
    return {"kube-apiserver": [f"--runtime-config={','.join(f'{k}={runtime[k]}' for k in sorted(runtime))}",
                               *gate_flags],
            "kube-scheduler": list(gate_flags),
            "kube-controller-manager": list(gate_flags)}


def _metrics(url: str, context: ssl.SSLContext, deadline: float, proc=None, log=None) -> str:
    last = ""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{url}: the process exited with {proc.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=5, context=context) as resp:
                body = resp.read().decode("utf-8", "replace")
            if "kubernetes_feature_enabled" in body:
                return body
            last = "no kubernetes_feature_enabled yet"
        except OSError as exc:
            last = str(exc)
        time.sleep(0.3)
    raise AssertionError(f"{url} never served the gates (last: {last}):\n{_tail(log)}")


def _tail(log) -> str:
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            return f.read()[-3000:]
    except (OSError, TypeError):
        return ""


def _unverified() -> ssl.SSLContext:
    """The component's own self-signed serving certificate on loopback: nothing to verify it by."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    return ctx


@pytest.fixture(scope="module")
def kind_control_plane(bin_dir, tmp_path_factory):
    """etcd and kube-apiserver with exactly kind's flags for the gates and API versions."""
    cp = ControlPlane(bin_dir, tmp_path_factory.mktemp("kind-flags"), feature_gates={}, runtime_config=(),
                      extra_args=kind_flags(kind_config())["kube-apiserver"])
    cp.start()
    yield cp
    cp.stop()


def test_the_kind_config_turns_on_what_the_suite_runs_with():
    config = kind_config()
    assert (config["kind"], config["apiVersion"]) == ("Cluster", "kind.x-k8s.io/v1alpha4")
    assert config["featureGates"] == DEFAULT_FEATURE_GATES
    assert sorted(f"{k}={v}" for k, v in config["runtimeConfig"].items()) == sorted(DEFAULT_RUNTIME_CONFIG)
    images = [node["image"] for node in config["nodes"]]
    assert images and all(re.fullmatch(r"kindest/node:v1\.37\.\d+(@sha256:[0-9a-f]{64})?", i) for i in images), images
    flags = kind_flags(config)
    gates = ("CompositePodGroup=true,DRAWorkloadResourceClaims=true,GenericWorkload=true,PodGroupPreemptionPolicy=true,"
             "TopologyAwareWorkloadScheduling=true,WorkloadWithJob=true")
    assert flags == {"kube-apiserver": ["--runtime-config=scheduling.k8s.io/v1alpha3=true,scheduling.k8s.io/v1beta1=true",
                                        f"--feature-gates={gates}"],
                     "kube-scheduler": [f"--feature-gates={gates}"],
                     "kube-controller-manager": [f"--feature-gates={gates}"]}
    with pytest.raises(ValueError, match="must be strings"):
        kind_flags({**config, "runtimeConfig": {"scheduling.k8s.io/v1beta1": True}})   # unquoted: kind refuses it
    with open(os.path.join(REPO, "docs", "local-cluster.md"), encoding="utf-8") as f:
        page = f.read()
    assert "kind create cluster --name workload-webhook --config examples/kind/cluster.yaml" in page


def test_kube_apiserver_with_kinds_flags_serves_the_scheduling_apis(kind_control_plane):
    cp = kind_control_plane
    body = _metrics(f"{cp.url}/metrics", cp.ssl_context("admin"), time.monotonic() + 30)
    gates = from_metrics(body)
    assert {g: gates.get(g) for g in DEFAULT_FEATURE_GATES} == {g: True for g in DEFAULT_FEATURE_GATES}
    proc = subprocess.run([cp.kubectl, "--kubeconfig", cp.kubeconfig("admin"), "api-resources",
                           "--api-group=scheduling.k8s.io", "-o", "name"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert {"workloads.scheduling.k8s.io", "podgroups.scheduling.k8s.io",
            "compositepodgroups.scheduling.k8s.io"} <= set(proc.stdout.split()), proc.stdout


@pytest.mark.parametrize("component", ["kube-scheduler", "kube-controller-manager"])
def test_the_scheduler_and_controller_manager_with_kinds_flags_run_with_every_gate(kind_control_plane, bin_dir,
                                                                                 tmp_path, component):
    cp = kind_control_plane
    (port,) = free_ports(1)
    args = [os.path.join(bin_dir, component), f"--kubeconfig={cp.kubeconfig('admin')}", "--leader-elect=false",
            f"--bind-address={LOOPBACK}", f"--secure-port={port}", f"--cert-dir={tmp_path}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            *kind_flags(kind_config())[component]]
    if component == "kube-controller-manager":
        args.append(f"--controllers={CONTROLLERS}")
    log = tmp_path / f"{component}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        body = _metrics(f"https://{LOOPBACK}:{port}/metrics", _unverified(), time.monotonic() + 60, proc, log)
        gates = from_metrics(body)
        assert {g: gates.get(g) for g in DEFAULT_FEATURE_GATES} == {g: True for g in DEFAULT_FEATURE_GATES}, \
            _tail(log)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_misspelt_gate_stops_every_component(bin_dir, component):
    config = kind_config()
    config["featureGates"] = {**config["featureGates"], "GenericWorkloads": True}
    proc = subprocess.run([os.path.join(bin_dir, component), *kind_flags(config)[component]], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    assert "unrecognized feature gate: GenericWorkloads" in proc.stderr + proc.stdout, proc.stderr[-2000:]


def test_a_misspelt_api_version_stops_the_api_server(bin_dir, tmp_path):
    config = kind_config()
    config["runtimeConfig"] = {**config["runtimeConfig"], "scheduling.k8s.io/v1beta9": "true"}
    cp = ControlPlane(bin_dir, tmp_path, feature_gates={}, runtime_config=(),
                      extra_args=kind_flags(config)["kube-apiserver"], startup_timeout=60)
    with pytest.raises(ControlPlaneError) as failed:
        cp.start()
    cp.stop()
    assert "group version scheduling.k8s.io/v1beta9 that has not been registered" in str(failed.value), \
        str(failed.value)[-2000:]
