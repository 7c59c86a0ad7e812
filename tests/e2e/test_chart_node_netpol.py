"""The chart's NetworkPolicy enforced on the real node (issue 27, point 5): the node runs
kube-router's network-policy controller (tests/e2e/node_netpol.py), the release has
`networkPolicy.enabled: true` with `ingressFrom` admitting the control-plane nodes' CIDR
and `metricsFrom` one namespace. Clients are Pods of the webhook image itself (no registry
here) connecting over TLS to the serving Pod's IP, as the API server does, and a host on
the node network standing in for a control-plane node elsewhere (its own namespace, a veth
on the node bridge). Without the policy (the control, last) the same clients connect.

On this single node the API server runs on the serving Pod's own node: it reaches the Pod
from the Pod bridge's gateway address, which the enforcer admits as the Pod's node (as
most network plugins do); an API server on another node is admitted by `ingressFrom`'s
ipBlock, which the peer host shows."""
from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from tests.e2e import node_netpol
from tests.e2e.conftest import _unavailable
from tests.e2e.node import NETNS, NODE_IP, NODE_PREFIX, POD_CIDR, in_ns
from tests.e2e.test_chart import CHART, TRAINJOB_TARGET
from tests.e2e.test_chart_node import bad_trainjob, in_ns as in_namespace, wait_for
from tests.server.harness import REPO
from tests.unit.helpers import pod, podgroup

NS, CLIENTS, MONITORING = "ww-netpol", "ww-netpol-clients", "monitoring"     # docs/helm.md's example
RELEASE = "wwp"
FULLNAME = f"{RELEASE}-workload-webhook"
NODE_CIDR = str(ipaddress.ip_network(f"{NODE_IP}/{NODE_PREFIX}", strict=False))
ADMISSION, METRICS = 8443, 9090
POLICY = {"enabled": True,
          "ingressFrom": [{"ipBlock": {"cidr": NODE_CIDR}}],          # the control-plane nodes
          "metricsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": MONITORING}}}]}
PEER_NETNS, PEER_IP = "ww-e2e-peer", "10.200.0.3"                 # a host on the node network

# One TLS request; prints "answered <HTTP status>", "refused", "timeout" or "error <why>".
PROBE = """
import socket, ssl, sys
host, port, method, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context()
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
body = "{}" if method == "POST" else ""
head = f"{method} {path} HTTP/1.1\\r\\nHost: {host}\\r\\nContent-Type: application/json\\r\\n"
try:
    with socket.create_connection((host, port), timeout=3) as raw, ctx.wrap_socket(raw) as tls:
        tls.sendall(f"{head}Content-Length: {len(body)}\\r\\nConnection: close\\r\\n\\r\\n{body}".encode())
        status = tls.recv(256).split(b"\\r\\n")[0].decode(errors="replace").split(" ")   # HTTP/1.x 200 OK
        print("answered", status[1] if len(status) > 1 else repr(status))
except TimeoutError:
    print("timeout")
except ConnectionRefusedError:
    print("refused")
except OSError as exc:
    print("error", exc)
"""
ADMIT, SCRAPE = (ADMISSION, "POST", "/validate"), (METRICS, "GET", "/metrics")


def client_pod(name: str, namespace: str, image: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "securityContext": {"runAsNonRoot": True, "runAsUser": 65532},
                     "containers": [{"name": "client", "image": image, "imagePullPolicy": "Never",
                                     "command": ["python3", "-c", "import time; time.sleep(86400)"]}]}}


class Clients:
    """Where each client asks from: a Pod (``kubectl exec``) or the peer host (``nsenter``)."""

    def __init__(self, node, target: str):
        self.node, self.target = node, target

    def probe(self, who: str, port: int, method: str, path: str) -> str:
        argv = ["python3", "-c", PROBE, self.target, str(port), method, path]
        if who == "peer":
            proc = subprocess.run(["nsenter", f"--net=/run/netns/{PEER_NETNS}", sys.executable, *argv[1:]],
                                  capture_output=True, text=True, timeout=30)
        else:
            namespace, name = who.split("/")
            proc = self.node.kubectl("exec", "-n", namespace, name, "--", *argv, check=False, timeout=30)
        return (proc.stdout.strip() or proc.stderr.strip()[-300:]) or f"exit {proc.returncode}"

    def until(self, who: str, where: tuple, outcomes: tuple[str, ...], timeout: float = 60) -> str:
        """Probe until the outcome starts with one of ``outcomes`` (the enforcer applies a policy
        change within a sync): returns it, or fails with the last one."""
        deadline = time.monotonic() + timeout
        while not (out := self.probe(who, *where)).startswith(outcomes):
            if time.monotonic() > deadline:
                pytest.fail(f"{who} -> {self.target}:{where[0]}{where[2]}: {out!r} for {timeout:.0f} s, not {outcomes}"
                            f"\n--- {node_netpol.NAME}\n{self.node.log(node_netpol.NAME, 20)}\n"
                            f"{self.node.diagnose(NS)}", pytrace=False)
            time.sleep(0.5)
        return out


def install(node, values: dict, *extra: str) -> None:
    proc = node.helm("upgrade", "--install", RELEASE, CHART, "-n", NS, "--create-namespace", "-f", "-", *extra,
                     "--wait", "--timeout", "120s", input=yaml.safe_dump(values), check=False, timeout=180)
    if proc.returncode != 0:
        pytest.fail(f"helm upgrade --install failed:\n{proc.stderr[-3000:]}\n{node.diagnose(NS)}", pytrace=False)


@pytest.fixture(scope="module")
def release(real_node, images):
    node = real_node
    if node.network_policy is None:
        _unavailable(f"the real node enforces no NetworkPolicy: {node.network_policy_missing}")
    node.kubectl("apply", "-f", os.path.join(REPO, "examples", "crds", "trainjob.yaml"))
    node.kubectl("wait", "--for=condition=Established", "crd/trainjobs.training.example.com", "--timeout=60s")
    for namespace in (CLIENTS, MONITORING):
        node.kubectl("create", "namespace", namespace)
    repository, tag = images["WEBHOOK_IMAGE"].rsplit(":", 1)
    values = {"image": {"repository": repository.removeprefix("docker.io/library/"), "tag": tag,
                        "pullPolicy": "Never"},
              "replicaCount": 1, "config": {"targets": [TRAINJOB_TARGET]}, "networkPolicy": POLICY}
    t0 = time.monotonic()
    install(node, values)
    for name, namespace in (("client", CLIENTS), ("scraper", MONITORING)):
        node.kubectl("create", "-f", "-", input=yaml.safe_dump(client_pod(name, namespace, images["WEBHOOK_IMAGE"])))
    for namespace in (CLIENTS, MONITORING):
        node.kubectl("wait", "--for=condition=Ready", "pod", "--all", "-n", namespace, "--timeout=90s")
    wait_for("the API server calling the webhook under the policy", lambda: "(DIS-2)" in node.kubectl(
        "create", "-f", "-", "--dry-run=server", input=yaml.safe_dump(in_namespace(bad_trainjob("probe"), CLIENTS)),
        check=False).stderr, node, interval=1)
    node.timings["NetworkPolicy release installed and called"] = time.monotonic() - t0
    serving = json.loads(node.kubectl("get", "pods", "-n", NS, "-l", "app.kubernetes.io/component=webhook",
                                      "-o", "json").stdout)["items"]
    assert len(serving) == 1 and serving[0]["status"].get("podIP"), serving
    yield node, Clients(node, serving[0]["status"]["podIP"]), values
    node.helm("uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "60s", check=False)
    for namespace in (CLIENTS, MONITORING):
        node.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def sh(*args: str) -> None:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, f"{' '.join(args)}: {proc.stderr}"


@pytest.fixture(scope="module")
def peer(release):
    """A host at PEER_IP on the node bridge, in a namespace of its own, routing to the Pods
    through the node (which then forwards): what a control-plane node elsewhere looks like
    to the serving Pod's node."""
    subprocess.run(["ip", "netns", "del", PEER_NETNS], capture_output=True)      # a killed run's
    sh("ip", "netns", "add", PEER_NETNS)
    try:
        sh("ip", "-n", NETNS, "link", "add", "ww-peer1", "type", "veth", "peer", "name", "ww-peer0",
           "netns", PEER_NETNS)
        sh("ip", "-n", NETNS, "link", "set", "ww-peer1", "master", "ww-node0", "up")
        sh("ip", "-n", PEER_NETNS, "addr", "add", f"{PEER_IP}/{NODE_PREFIX}", "dev", "ww-peer0")
        for link in ("lo", "ww-peer0"):
            sh("ip", "-n", PEER_NETNS, "link", "set", link, "up")
        sh("ip", "-n", PEER_NETNS, "route", "add", POD_CIDR, "via", NODE_IP)
        sh(*in_ns("sysctl", "-q", "-w", "net.ipv4.ip_forward=1"))
        yield PEER_IP
    finally:
        subprocess.run(in_ns("sysctl", "-q", "-w", "net.ipv4.ip_forward=0"), capture_output=True)
        subprocess.run(["ip", "-n", NETNS, "link", "del", "ww-peer1"], capture_output=True)
        subprocess.run(["ip", "netns", "del", PEER_NETNS], capture_output=True)


def local_addresses() -> set[str]:
    out = subprocess.run(in_ns("ip", "-o", "-4", "addr", "show"), capture_output=True, text=True, timeout=30).stdout
    return {line.split()[3].split("/")[0] for line in out.splitlines()}


def test_the_api_server_still_calls_the_webhook_under_the_policy(release):
    node, clients, _ = release
    dry = node.kubectl("create", "-f", "-", "--dry-run=server", check=False,
                       input=yaml.safe_dump(in_namespace(bad_trainjob(), CLIENTS)))
    assert dry.returncode != 0 and "(DIS-2)" in dry.stderr, dry.stderr
    # Where it calls from: an address of the serving Pod's own node (the Pod bridge's gateway),
    # which the enforcer admits as the Pod's node; the connection outlives the call.
    ss = subprocess.run(in_ns("ss", "-Htn", "state", "established", "dst", f"{clients.target}:{ADMISSION}"),
                        capture_output=True, text=True, timeout=30).stdout.split()
    sources = {ss[i].rsplit(":", 1)[0] for i in range(2, len(ss), 4)}
    assert sources and sources <= local_addresses(), (ss, local_addresses())
    # A labelled Pod joins its PodGroup: the webhook's watch cache reads the API server through
    # the policy's egress rule (6443, after the `kubernetes` Service's DNAT).
    node.kubectl("apply", "-f", "-", input=yaml.safe_dump(in_namespace(podgroup("train-0"), CLIENTS)))
    member = in_namespace(pod({"scheduling.k8s.io/pod-group": "train-0"}), CLIENTS)
    member["spec"]["containers"][0].update(image=node.images["PAUSE_IMAGE"], imagePullPolicy="Never")
    text = yaml.safe_dump(member)
    wait_for("the webhook seeing PodGroup train-0", lambda: yaml.safe_load(node.kubectl(
        "create", "-f", "-", "--dry-run=server", "-o", "yaml", input=text).stdout)["spec"].get("schedulingGroup"),
        node, namespace=NS)
    node.kubectl("create", "-f", "-", input=text)
    stored = json.loads(node.kubectl("get", "pod", "p", "-n", CLIENTS, "-o", "json").stdout)
    assert stored["spec"]["schedulingGroup"] == {"podGroupName": "train-0"}


def test_a_pod_in_another_namespace_reaches_neither_port(release):
    _, clients, _ = release
    for where in (ADMIT, SCRAPE):
        assert clients.until(f"{CLIENTS}/client", where, ("refused", "timeout"))


def test_a_pod_matched_by_metricsFrom_reaches_metrics_but_not_admission(release):
    _, clients, _ = release
    assert clients.until(f"{MONITORING}/scraper", SCRAPE, ("answered",)) == "answered 200"
    assert clients.until(f"{MONITORING}/scraper", ADMIT, ("refused", "timeout"))


def test_a_host_in_ingressFroms_ipBlock_reaches_admission_but_not_metrics(release, peer):
    """An API server on another node: admitted to the admission port by the ipBlock alone
    (it is not the Pod's node), refused on the metrics port (not in metricsFrom)."""
    _, clients, _ = release
    assert clients.until("peer", ADMIT, ("answered",)).startswith("answered 4")   # {} is no review
    assert clients.until("peer", SCRAPE, ("refused", "timeout"))


def test_helm_test_passes_under_the_policy(release):
    node, _, _ = release
    proc = node.helm("test", RELEASE, "-n", NS, "--timeout", "120s", check=False, timeout=180)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{node.diagnose(NS)}"


def test_control_without_the_policy_the_same_clients_connect(release, peer):
    """The clients work: the refusals above are the policy's. (Last: it lifts the policy, and
    puts it back.)"""
    node, clients, values = release
    install(node, {**values, "networkPolicy": {**POLICY, "enabled": False}})
    try:
        assert node.kubectl("get", "networkpolicy", "-n", NS, "-o", "name").stdout.strip() == ""
        assert clients.until(f"{CLIENTS}/client", ADMIT, ("answered",)).startswith("answered 4")
        assert clients.until(f"{CLIENTS}/client", SCRAPE, ("answered",)) == "answered 200"
        assert clients.until(f"{MONITORING}/scraper", ADMIT, ("answered",)).startswith("answered 4")
        assert clients.until("peer", SCRAPE, ("answered",)) == "answered 200"
    finally:
        install(node, values)
    assert clients.until(f"{CLIENTS}/client", ADMIT, ("refused", "timeout"))
