"""A real single-node Kubernetes 1.37 for the e2e tests: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, containerd (Debian's, with runc and the CNI
plugins) and a kubelet, all in one network namespace of the harness's own.

The namespace (``ip netns add``) has no default route and no link out: loopback, a
bridge with no ports carrying the node IP, the Pods' CNI bridge, a route for the
Service range onto the node bridge and one DNAT (PREROUTING and OUTPUT) from the
``kubernetes`` Service IP:443 to the API server, standing in for kube-proxy. Every
process is started with ``nsenter --net`` (``ip netns exec`` would hide the cgroup v1
mounts from runc). Images come from hack/build-images.sh archives (``ctr import``),
never a registry. Facts: ../shared/design/e2e-notes.md, "A real node". With
``network_policy`` (hack/build-network-policy.sh's kube-router) the node enforces
NetworkPolicies (tests/e2e/node_netpol.py). The API server listens on 6443, kubeadm's
port: a Pod's egress policy sees it, not 443, after the ``kubernetes`` Service's DNAT.

One fixed namespace name and directory per machine (runs must not overlap); whatever a
killed earlier run left (PID files, shims, kubepods cgroups, mounts, the namespace) is
cleaned at start, and everything again at stop and at interpreter exit.

    node = RealNode(bin_dir, images, network_policy=kube_router).start()
    node.kubectl("get", "nodes")            # kubectl / helm inside the namespace
    node.stop()
"""
from __future__ import annotations

import atexit
import ipaddress
import os
import subprocess
import time
from pathlib import Path

from tests.e2e import node_cleanup, node_files, node_netpol
from tests.e2e.controlplane import DEFAULT_FEATURE_GATES, SERVICE_CLUSTER_IP_RANGE, ControlPlane, ControlPlaneError, tail
from tests.e2e.netns import in_netns
from tests.e2e.pki import CertificateAuthority
from tests.e2e.node_files import BASE, NETNS
from tests.e2e.rest import Api

NODE_NAME = "ww-node"
NODE_IP, NODE_PREFIX = "10.200.0.2", 24
API_SERVER_PORT = 6443                 # kubeadm's; free in the node's own namespace
POD_CIDR = "10.244.0.0/24"
SERVICE_IP = str(next(ipaddress.ip_network(SERVICE_CLUSTER_IP_RANGE).hosts()))   # the `kubernetes` Service
NODE_BRIDGE, POD_BRIDGE = "ww-node0", "ww-cni0"
KUBERNETES_NAMES = ["kubernetes", "kubernetes.default", "kubernetes.default.svc",
                    "kubernetes.default.svc.cluster.local"]


class NodeError(RuntimeError):
    """The node did not come up (message carries the relevant logs)."""


def sh(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        return node_cleanup.sh(*args, check=check, timeout=timeout)
    except RuntimeError as exc:
        raise NodeError(str(exc)) from None


def in_ns(*args: str) -> list[str]:
    return ["nsenter", f"--net=/run/netns/{NETNS}", *args]


# --------------------------------------------------------------------------- the node


class RealNode:
    """The whole node; ``images``: hack/build-images.sh's KEY=VALUE lines as a dict;
    ``network_policy``: the NetworkPolicy enforcer's binary, or None for none."""

    def __init__(self, bin_dir: str | os.PathLike, images: dict[str, str], *, feature_gates=None,
                 network_policy: str | os.PathLike | None = None) -> None:
        self.bin_dir = Path(bin_dir)
        self.network_policy = Path(network_policy) if network_policy else None
        self.network_policy_missing = ""        # why not, when None (set by the fixture)
        self.images = images
        self.feature_gates = dict(DEFAULT_FEATURE_GATES if feature_gates is None else feature_gates)
        self.cp: ControlPlane | None = None
        self.procs: dict[str, subprocess.Popen] = {}
        self.timings: dict[str, float] = {}
        self.kubectl_bin, self.helm_bin = str(self.bin_dir / "kubectl"), str(self.bin_dir / "helm")
        self.logs = BASE / "logs"
        self._files: list = []

    # -- running things inside ---------------------------------------------------------

    def run(self, args: list[str], *, input: str | None = None, check: bool = True,
            timeout: float = 120) -> subprocess.CompletedProcess:
        """``args`` inside the namespace (kubectl and helm find the admin kubeconfig in KUBECONFIG)."""
        env = dict(os.environ, KUBECONFIG=self.cp.kubeconfig("admin"))
        proc = subprocess.run(in_ns(*args), input=input, capture_output=True, text=True, timeout=timeout, env=env)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(args[:6])} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return proc

    def kubectl(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return self.run([self.kubectl_bin, *args], **kw)

    def helm(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return self.run([self.helm_bin, *args], **kw)

    def tag_image(self, source: str, target: str) -> None:
        """Give an imported image a second name in the node's containerd, as a pull of
        ``target`` would have left it (``ctr images tag``)."""
        sock = BASE / "containerd" / "containerd.sock"
        sh("ctr", "--address", str(sock), "--namespace", "k8s.io", "images", "tag", "--force", source, target)

    def api(self, method: str, path: str, body=None, content_type: str = "application/json") -> tuple[int, dict]:
        """One JSON call to the API server from inside the namespace."""
        return in_netns(NETNS, Api(self.cp).call, method, path, body, content_type)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> "RealNode":
        for b in ("kube-controller-manager", "kubelet", "kube-scheduler"):
            if not os.access(self.bin_dir / b, os.X_OK):
                raise NodeError(f"{self.bin_dir / b} missing: hack/build-control-plane.sh builds it")
        _live.append(self)
        node_cleanup.cleanup()
        sh("rm", "-rf", str(BASE))
        for d in ("logs", "pids", "cni/net.d", "containerd", "kubelet", "pod-logs"):
            (BASE / d).mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        try:
            self._network()
            self._control_plane()
            self._controllers()
            self._containerd()
            self._kubelet()
            if self.network_policy:
                self._network_policies()
        except BaseException:
            self.stop()
            raise
        self.timings["bring-up"] = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Kubelet, containers, shims, containerd, controllers, control plane, mounts,
        namespace, cgroups. Logs stay in BASE/logs until the next start. Idempotent."""
        self._terminate(node_netpol.NAME)     # its chains and sets go with the namespace
        self._terminate("kubelet")
        node_cleanup.kill_containers()
        for name in ("containerd", "kube-scheduler", "kube-controller-manager"):
            self._terminate(name)
        if self.cp is not None:
            self.cp.stop()
        node_cleanup.cleanup()
        for f in self._files:
            f.close()
        self._files = []
        for d in ("containerd", "kubelet", "cni", "cp/etcd-data"):      # the bulk; logs stay
            sh("rm", "-rf", str(BASE / d), check=False)
        if self in _live:
            _live.remove(self)

    def _terminate(self, name: str, grace: float = 10) -> None:
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")
        self._files.append(log)
        proc = subprocess.Popen(in_ns(*args), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                cwd=BASE, start_new_session=True)
        (BASE / "pids" / f"{name}.pid").write_text(str(proc.pid))
        self.procs[name] = proc
        return proc

    def _alive(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            raise NodeError(f"{name} exited with {proc.returncode}:\n{self.log(name, 60)}")

    def log(self, name: str, lines: int = 40) -> str:
        return tail(self.logs / f"{name}.log", lines)

    def _gates(self) -> str:
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in self.feature_gates.items())

    # -- pieces ---------------------------------------------------------------------------

    def _network(self) -> None:
        sh("ip", "netns", "add", NETNS)
        ip = ["ip", "-n", NETNS]
        sh(*ip, "link", "set", "lo", "up")
        sh(*ip, "link", "add", NODE_BRIDGE, "type", "bridge")
        sh(*ip, "addr", "add", f"{NODE_IP}/{NODE_PREFIX}", "dev", NODE_BRIDGE)
        sh(*ip, "link", "set", NODE_BRIDGE, "up")
        sh(*ip, "route", "add", SERVICE_CLUSTER_IP_RANGE, "dev", NODE_BRIDGE)
        routes = sh(*ip, "route", "show").stdout
        if "default" in routes:
            raise NodeError(f"namespace {NETNS} has a default route:\n{routes}")

    def _control_plane(self) -> None:
        self.ca = CertificateAuthority()
        pki = BASE / "pki"
        pki.mkdir(exist_ok=True)
        cert, key = self.ca.issue("kube-apiserver-kubelet-client", organizations=["system:masters"], client=True)
        (pki / "kubelet-client.crt").write_bytes(cert)
        (pki / "kubelet-client.key").write_bytes(key)
        self.cp = ControlPlane(
            self.bin_dir, BASE / "cp", netns=NETNS, bind_address="0.0.0.0", advertise_address=NODE_IP,
            extra_sans=[NODE_IP, SERVICE_IP, *KUBERNETES_NAMES], ca=self.ca, pid_dir=BASE / "pids",
            feature_gates=self.feature_gates, secure_port=API_SERVER_PORT,
            disable_admission_plugins=(),    # ServiceAccount on: Pods get their tokens
            authorization_mode="Node,RBAC",
            extra_args=["--enable-admission-plugins=NodeRestriction",
                        "--enable-aggregator-routing=true", "--kubelet-preferred-address-types=InternalIP",
                        f"--kubelet-client-certificate={pki / 'kubelet-client.crt'}",
                        f"--kubelet-client-key={pki / 'kubelet-client.key'}"])
        try:
            self.cp.start()
        except ControlPlaneError as exc:
            raise NodeError(f"control plane in {NETNS}: {exc}") from exc
        self.timings["API server ready"] = self.cp.startup_seconds
        # kube-proxy's one job here: the `kubernetes` Service IP:443 to the API server.
        for chain in ("PREROUTING", "OUTPUT"):
            sh(*in_ns("iptables", "-t", "nat", "-A", chain, "-d", f"{SERVICE_IP}/32", "-p", "tcp", "--dport", "443",
                      "-j", "DNAT", "--to-destination", f"{NODE_IP}:{self.cp.port}"))

    def _controllers(self) -> None:
        admin = self.cp.kubeconfig("admin")
        self._spawn("kube-controller-manager", [
            str(self.bin_dir / "kube-controller-manager"), f"--kubeconfig={admin}", "--leader-elect=false",
            "--secure-port=0", "--use-service-account-credentials=false",
            f"--service-account-private-key-file={self.cp.sa_key_path}", f"--root-ca-file={self.cp.ca_path}",
            f"--feature-gates={self._gates()}", "-v=1"])
        self._spawn("kube-scheduler", [
            str(self.bin_dir / "kube-scheduler"), f"--kubeconfig={admin}", "--leader-elect=false",
            "--secure-port=0", f"--feature-gates={self._gates()}", "-v=1"])

    def _containerd(self) -> None:
        t0 = time.monotonic()
        conf = BASE / "containerd" / "config.toml"
        conf.write_text(node_files.containerd_toml(BASE, self.images["PAUSE_IMAGE"]))
        (BASE / "cni" / "net.d" / "10-ww-e2e.conflist").write_text(node_files.cni_conflist(BASE, POD_CIDR, POD_BRIDGE))
        self._spawn("containerd", ["containerd", "--config", str(conf)])
        sock = BASE / "containerd" / "containerd.sock"
        ctr = ["ctr", "--address", str(sock), "--namespace", "k8s.io"]
        deadline = time.monotonic() + 60
        while sh(*ctr, "version", check=False).returncode != 0:
            self._alive("containerd")
            if time.monotonic() > deadline:
                raise NodeError(f"containerd did not answer on {sock}:\n{self.log('containerd')}")
            time.sleep(0.2)
        for key in ("PAUSE_ARCHIVE", "WEBHOOK_ARCHIVE"):
            proc = sh(*ctr, "images", "import", self.images[key], check=False, timeout=300)
            if proc.returncode != 0:
                raise NodeError(f"ctr images import {self.images[key]} failed: {proc.stderr}\n{self.log('containerd')}")
        self.timings["containerd and image import"] = time.monotonic() - t0

    def _kubelet(self) -> None:
        t0 = time.monotonic()
        (BASE / "resolv.conf").write_text("")
        conf = BASE / "kubelet.yaml"
        conf.write_text(node_files.kubelet_yaml(BASE, node_ip=NODE_IP, ca_path=self.cp.ca_path,
                                                feature_gates=self.feature_gates))
        kubeconfig = self.cp.add_user(f"system:node:{NODE_NAME}", ["system:nodes"])
        self._spawn("kubelet", [
            str(self.bin_dir / "kubelet"), f"--config={conf}", f"--kubeconfig={kubeconfig}",
            f"--root-dir={BASE / 'kubelet'}", f"--cert-dir={BASE / 'kubelet' / 'pki'}",
            f"--hostname-override={NODE_NAME}", f"--node-ip={NODE_IP}", "-v=2"])
        deadline = time.monotonic() + 120
        last = "not registered"
        while time.monotonic() < deadline:
            for name in ("kubelet", "containerd", "kube-controller-manager", "kube-scheduler"):
                self._alive(name)
            status, node = self.api("GET", f"/api/v1/nodes/{NODE_NAME}")
            if status == 200:
                ready = [c for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
                taints = [t["key"] for t in node.get("spec", {}).get("taints", [])]
                ready = ready[0] if ready else {"status": "?"}
                last = f"Ready={ready['status']} ({ready.get('message', '')}), taints={taints}"
                if ready["status"] == "True" and not taints:
                    self.timings["Node Ready"] = time.monotonic() - t0
                    return
            time.sleep(0.5)
        raise NodeError(f"node {NODE_NAME} not Ready and untainted within 120 s (last: {last})\n"
                        f"--- kubelet\n{self.log('kubelet', 60)}\n--- containerd\n{self.log('containerd', 30)}\n"
                        f"--- kube-controller-manager\n{self.log('kube-controller-manager', 20)}")

    def _network_policies(self) -> None:
        t0 = time.monotonic()
        self._spawn(node_netpol.NAME, node_netpol.args(
            self.network_policy, kubeconfig=self.cp.kubeconfig("admin"), node_name=NODE_NAME,
            service_range=SERVICE_CLUSTER_IP_RANGE))
        deadline = time.monotonic() + 60
        while not node_netpol.synced(in_ns):
            self._alive(node_netpol.NAME)
            if time.monotonic() > deadline:
                raise NodeError(f"{node_netpol.NAME} did not sync its chains within 60 s:\n"
                                f"{self.log(node_netpol.NAME)}")
            time.sleep(0.2)
        self.timings["NetworkPolicy enforcer synced"] = time.monotonic() - t0

    # -- diagnostics ------------------------------------------------------------------------

    def diagnose(self, namespace: str | None = None) -> str:
        """What a failure message should show: Pods and events, container logs, the
        kubelet's and containerd's log tails."""
        out = []
        scope = ["-n", namespace] if namespace else ["-A"]
        for args in (["get", "pods", "-o", "wide", *scope], ["get", "events", "--sort-by=.lastTimestamp", *scope]):
            proc = self.kubectl(*args, check=False, timeout=30)
            out.append(f"--- kubectl {' '.join(args)}\n{proc.stdout[-3000:]}{proc.stderr[-500:]}")
        # <podLogsDir>/<namespace>_<pod>_<uid>/<container>/<restart>.log
        for f in sorted((BASE / "pod-logs").glob(f"{namespace or '*'}_*/*/*.log"))[-8:]:
            out.append(f"--- {f.relative_to(BASE)}\n{tail(f, 25)}")
        out.append(f"--- kubelet\n{self.log('kubelet', 40)}\n--- containerd\n{self.log('containerd', 20)}")
        return "\n".join(out)


_live: list[RealNode] = []


@atexit.register
def _stop_all() -> None:      # last resort: never leave a node behind
    for node in list(_live):
        node.stop()
