"""Session fixtures for the end-to-end tests: a real etcd + kube-apiserver
(built by hack/build-control-plane.sh), the real `workload-webhook serve`
registered in URL mode on 127.0.0.1, and the real kubectl.

A missing Go toolchain, a failed build or a control plane that does not start
fails the tests, with the reason. Only an explicit WW_SKIP_E2E=1 (ignored when
CI=true) leaves them out, at collection, visibly."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid

import pytest
import yaml

from tests.e2e.controlplane import ControlPlane, ControlPlaneError
from tests.server.harness import REPO, Server
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations

CI = os.environ.get("CI") == "true"
E2E_CONFIG = os.path.join(REPO, "tests", "e2e", "config.yaml")


def _unavailable(reason: str):
    hint = "" if CI else "\n(WW_SKIP_E2E=1 runs the suite without the end-to-end tests)"
    pytest.fail(f"real component unavailable: {reason}{hint}", pytrace=False)


def pytest_collection_modifyitems(items):
    left_out = os.environ.get("WW_SKIP_E2E") == "1" and not CI
    for item in items:
        if "tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)
            if left_out:
                item.add_marker(pytest.mark.skip(reason="WW_SKIP_E2E=1: end-to-end tests left out on request"))


@pytest.fixture(scope="session")
def bin_dir() -> str:
    if shutil.which("go") is None:
        _unavailable("the go command is not on PATH (needed to build kube-apiserver and etcd)")
    proc = subprocess.run([os.path.join(REPO, "hack", "build-control-plane.sh")], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        _unavailable(f"hack/build-control-plane.sh failed:\n{proc.stderr[-3000:]}")
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def images() -> dict[str, str]:
    """The images of the real node (hack/build-images.sh: built by the setup, instant when cached):
    PAUSE_IMAGE, PAUSE_ARCHIVE, WEBHOOK_IMAGE, WEBHOOK_ARCHIVE."""
    proc = subprocess.run([os.path.join(REPO, "hack", "build-images.sh")], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        _unavailable(f"hack/build-images.sh failed:\n{proc.stderr[-3000:]}")
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


def network_policy_enforcer() -> tuple[str | None, str]:
    """hack/build-network-policy.sh's kube-router (built by the setup, instant when cached) and
    "", or None and why not; in CI its absence fails, as any real component's."""
    proc = subprocess.run([os.path.join(REPO, "hack", "build-network-policy.sh")], capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode == 0:
        return proc.stdout.strip().splitlines()[-1], ""
    reason = f"hack/build-network-policy.sh failed:\n{proc.stderr[-3000:]}"
    if CI:
        _unavailable(reason)
    return None, reason


@pytest.fixture(scope="session")
def real_node(bin_dir, images):
    """A real kubelet + containerd node with its own control plane (tests/e2e/node.py), enforcing
    NetworkPolicies when the enforcer could be built (else ``node.network_policy_missing`` says why)."""
    from tests.e2e.node import NodeError, RealNode
    enforcer, missing = network_policy_enforcer()
    node = RealNode(bin_dir, images, network_policy=enforcer)
    node.network_policy_missing = missing
    try:
        node.start()
    except NodeError as exc:
        _unavailable(f"the real node did not start: {exc}")
    yield node
    node.stop()
    from tests.e2e import summary
    summary.add("real node: " + ", ".join(f"{k} {v:.1f} s" for k, v in node.timings.items()))


@pytest.fixture(scope="session")
def cluster(bin_dir, tmp_path_factory):
    cp = ControlPlane(bin_dir, tmp_path_factory.mktemp("controlplane"))
    try:
        cp.start()
    except ControlPlaneError as exc:
        _unavailable(f"control plane did not start: {exc}")
    yield cp
    cp.stop()


class Kubectl:
    def __init__(self, cluster: ControlPlane):
        self.cluster = cluster

    def __call__(self, *args: str, user: str = "admin", stdin: str | None = None, check: bool = True,
                 timeout: float = 60) -> subprocess.CompletedProcess:
        cmd = [self.cluster.kubectl, "--kubeconfig", self.cluster.kubeconfig(user), *args]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def apply(self, obj: dict | list, *extra: str, check: bool = True, user: str = "admin"):
        docs = obj if isinstance(obj, list) else [obj]
        return self("apply", "-f", "-", *extra, stdin=yaml.safe_dump_all(docs), check=check, user=user)

    def create(self, obj: dict, *extra: str, check: bool = True, user: str = "admin"):
        return self("create", "-f", "-", *extra, stdin=yaml.safe_dump(obj), check=check, user=user)

    def get(self, kind: str, name: str, namespace: str) -> dict:
        return json.loads(self("get", kind, name, "-n", namespace, "-o", "json").stdout)

    def exists(self, kind: str, name: str, namespace: str) -> bool:
        return self("get", kind, name, "-n", namespace, "--ignore-not-found", "-o", "name", check=False).stdout.strip() != ""


@pytest.fixture(scope="session")
def kubectl(cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture(scope="session")
def crds(kubectl):
    kubectl("apply", "-f", os.path.join(REPO, "examples", "crds", "trainjob.yaml"))
    kubectl("wait", "--for=condition=Established", "crd/trainjobs.training.example.com", "--timeout=60s")


class Webhook:
    """The real server registered with the API server in URL mode."""

    def __init__(self, cluster: ControlPlane, kubectl: Kubectl, workdir: str):
        self.cluster, self.kubectl, self.workdir = cluster, kubectl, workdir
        self.config = config_mod.load(E2E_CONFIG)
        self.server: Server | None = None
        self.port: int | None = None

    def start(self) -> "Webhook":
        extra = ["--cluster", "kubeconfig", "--kubeconfig", self.cluster.kubeconfig("admin"), "--workers", "2"]
        self.server = Server(self.workdir, config=E2E_CONFIG, extra=extra)
        if self.port:                      # a restart keeps the registered URL
            self.server.port, self.server.port_fixed = self.port, True
            self.server.args[self.server.args.index("--port") + 1] = str(self.port)
        self.server.start()
        self.port = self.server.port
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status, _, body = self.server.get("/readyz")
            if status == 200:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"webhook cache never synced: {body!r}\n{self.server.log()}")
        return self

    def stop(self) -> None:
        if self.server:
            self.server.stop()

    def register(self, pod_failure_policy: str = "Fail") -> None:
        with open(os.path.join(self.server.cert_dir, "ca.crt"), "rb") as f:
            ca = f.read()
        docs = configurations(self.config, Endpoint(ca, url=f"https://127.0.0.1:{self.port}"),
                              name="workload-webhook", namespace="workload-webhook",
                              pod_failure_policy=pod_failure_policy)
        self.kubectl.apply(docs)
        self.wait_until_called()

    def wait_until_called(self) -> None:
        """The API server picks registrations up asynchronously: wait until it
        calls this webhook (its own DIS-2 denial, not "failed calling webhook")."""
        probe = {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob",
                 "metadata": {"name": "probe", "namespace": "default"},
                 "spec": {"replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}},
                                                        "disruptionMode": {"all": {}}}}}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            proc = self.kubectl.create(probe, "--dry-run=server", check=False)
            if proc.returncode != 0 and "spec.scheduling.disruptionMode: Invalid value" in proc.stderr:
                return
            time.sleep(0.3)
        raise AssertionError("the API server never called the webhook")

    def log_since(self, offset: int) -> str:
        with open(self.server.log_path, encoding="utf-8", errors="replace") as f:
            f.seek(offset)
            return f.read()

    def log_size(self) -> int:
        return os.path.getsize(self.server.log_path)


@pytest.fixture(scope="session")
def webhook(cluster, kubectl, crds, tmp_path_factory):
    hook = Webhook(cluster, kubectl, str(tmp_path_factory.mktemp("webhook"))).start()
    hook.register()
    yield hook
    hook.stop()


@pytest.fixture
def namespace(kubectl) -> str:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", name)
    return name


@pytest.fixture(autouse=True)
def _explain_failures(request):
    """Remember where the webhook log stood, so a failure can show what it logged."""
    if "webhook" in request.fixturenames:
        hook = request.getfixturevalue("webhook")
        request.node._ww_hook = hook
        request.node._ww_offset = hook.log_size() if hook.server else 0
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed e2e test shows the webhook's log lines of that test and the API server's log tail."""
    outcome = yield
    rep = outcome.get_result()
    hook = getattr(item, "_ww_hook", None)
    if rep.when == "call" and rep.failed and hook is not None and hook.server:
        rep.sections.append(("webhook log during this test", hook.log_since(item._ww_offset)[-8000:]))
        with open(hook.cluster.apiserver_log, encoding="utf-8", errors="replace") as f:
            rep.sections.append(("kube-apiserver log (tail)", f.read()[-4000:]))
    node = getattr(item, "funcargs", {}).get("real_node") if rep.when == "call" and rep.failed else None
    if node is not None and node.cp is not None:
        rep.sections.append(("real node: pods, events, container logs, kubelet and containerd", node.diagnose()))


def pytest_terminal_summary(terminalreporter):
    from tests.e2e import summary
    for line in summary.LINES:
        terminalreporter.write_line(line)
