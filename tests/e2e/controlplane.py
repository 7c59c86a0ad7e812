"""Start a real, node-less Kubernetes control plane (etcd + kube-apiserver) for tests.

Binaries come from ``hack/build-control-plane.sh`` (kube-apiserver, kubectl, etcd,
helm built from the Go module proxy). Everything listens on and dials 127.0.0.1 only.

Usage::

    from tests.e2e.controlplane import ControlPlane

    with ControlPlane(bin_dir, work_dir) as cp:
        subprocess.run([cp.kubectl, "--kubeconfig", cp.kubeconfig("admin"), "get", "ns"])

Plain module: stdlib + ``cryptography`` (certificates) + PyYAML (kubeconfigs).
"""

from __future__ import annotations

import atexit
import base64
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.e2e.netns import urlopen_in
from tests.e2e.pki import CertificateAuthority, _pem_key, _write

LOOPBACK = "127.0.0.1"

#: Feature gates needed for the Workload / PodGroup / CompositePodGroup APIs.
#: All exist in k8s.io/kubernetes v1.37.2 (pkg/features/kube_features.go).
DEFAULT_FEATURE_GATES: dict[str, bool] = {
    "GenericWorkload": True,  # beta 1.37, default off: Workload + PodGroup
    "TopologyAwareWorkloadScheduling": True,  # alpha: schedulingConstraints
    "DRAWorkloadResourceClaims": True,  # beta 1.37, default off: resourceClaims
    "CompositePodGroup": True,  # alpha 1.37: CompositePodGroup kind
    "PodGroupPreemptionPolicy": True,  # alpha 1.37: preemptionPolicy
    "WorkloadWithJob": True,  # alpha 1.37: batch/v1 JobSpec.scheduling (the Job agreement table)
}

#: API versions that are off by default and must be enabled explicitly.
DEFAULT_RUNTIME_CONFIG: tuple[str, ...] = (
    "scheduling.k8s.io/v1beta1=true",
    "scheduling.k8s.io/v1alpha3=true",
)

#: No kube-controller-manager runs, so the ServiceAccount plugin (token secrets)
#: must be off. Note: the default-on PodGroupProtection plugin stays enabled and
#: stamps the finalizer "scheduling.k8s.io/podgroup-protection" on every new
#: PodGroup; nothing removes it here, so a deleted PodGroup lingers (and
#: `kubectl delete` waits) until a test clears metadata.finalizers. Pass
#: ("ServiceAccount", "PodGroupProtection") to avoid that.
DEFAULT_DISABLED_ADMISSION_PLUGINS: tuple[str, ...] = ("ServiceAccount",)

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"

AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{group: audit.example.com}]
  - level: None
"""  # config value only; nothing dials it


class ControlPlaneError(RuntimeError):
    """The control plane failed to start (message includes the log tail)."""


# --------------------------------------------------------------------------- helpers


def free_ports(n: int) -> list[int]:
    """Return ``n`` distinct currently-free TCP ports on 127.0.0.1."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<cannot read {path}: {exc}>"
    return "\n".join(text.splitlines()[-lines:])


def _stop_process(proc: subprocess.Popen | None, grace: float) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


_live: "weakref.WeakSet[ControlPlane]" = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:  # last resort: never leave servers behind
    for cp in list(_live):
        cp.stop()


# --------------------------------------------------------------------------- control plane


class ControlPlane:
    """etcd + kube-apiserver on 127.0.0.1, client-certificate users, kubeconfigs.

    Users: ``admin`` (O=system:masters) and ``alice`` (no groups besides
    ``system:authenticated``). More via :meth:`add_user`.

    For a real node (tests/e2e/node.py): ``netns`` runs both processes in network
    namespace /run/netns/NETNS (``nsenter --net``) and probes them there;
    ``bind_address``/``advertise_address`` and ``extra_sans`` (IPs or DNS names added to
    the serving certificate, e.g. the ``kubernetes`` Service IP and the node IP); ``ca``
    (a CA made beforehand, to sign other components' certificates); ``pid_dir`` (each
    process's PID in ``<binary>.pid`` there, for a harness's stale-run cleanup);
    ``authorization_mode`` (``Node,RBAC`` with a kubelet).
    """

    def __init__(
        self,
        bin_dir: str | os.PathLike,
        work_dir: str | os.PathLike,
        *,
        extra_args: Sequence[str] = (),
        feature_gates: Mapping[str, bool] | None = None,
        runtime_config: Sequence[str] = DEFAULT_RUNTIME_CONFIG,
        disable_admission_plugins: Sequence[str] = DEFAULT_DISABLED_ADMISSION_PLUGINS,
        startup_timeout: float = 120.0,
        stop_grace: float = 5.0,
        netns: str | None = None,
        bind_address: str = LOOPBACK,
        advertise_address: str = LOOPBACK,
        extra_sans: Sequence[str] = (),
        ca: CertificateAuthority | None = None,
        pid_dir: str | os.PathLike | None = None,
        authorization_mode: str = "RBAC",
    ) -> None:
        self.bin_dir = Path(bin_dir).resolve()
        self.work_dir = Path(work_dir).resolve()
        self.extra_args = list(extra_args)
        self.feature_gates = dict(DEFAULT_FEATURE_GATES if feature_gates is None else feature_gates)
        self.runtime_config = list(runtime_config)
        self.disable_admission_plugins = list(disable_admission_plugins)
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self.netns = netns
        self.bind_address, self.advertise_address = bind_address, advertise_address
        self.extra_sans = list(extra_sans)
        self._given_ca = ca
        self.pid_dir = Path(pid_dir) if pid_dir is not None else None
        self.authorization_mode = authorization_mode

        self.etcd_bin = self.bin_dir / "etcd"
        self.apiserver_bin = self.bin_dir / "kube-apiserver"
        self.kubectl = str(self.bin_dir / "kubectl")
        self.helm = str(self.bin_dir / "helm")

        self.pki_dir = self.work_dir / "pki"
        self.etcd_data_dir = self.work_dir / "etcd-data"
        self.etcd_log = self.work_dir / "etcd.log"
        self.apiserver_log = self.work_dir / "kube-apiserver.log"
        self.ca_path = self.pki_dir / "ca.crt"

        self.ca: CertificateAuthority | None = None
        self.etcd_port: int | None = None
        self.etcd_peer_port: int | None = None
        self.port: int | None = None
        self.apiserver_args: list[str] = []
        self._kubeconfigs: dict[str, Path] = {}
        self._client_certs: dict[str, tuple[Path, Path]] = {}
        self.startup_seconds: float | None = None
        self._etcd: subprocess.Popen | None = None
        self._apiserver: subprocess.Popen | None = None
        self._logs: list = []

    # -- public properties -------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.port is None:
            raise ControlPlaneError("control plane not started")
        return f"https://{LOOPBACK}:{self.port}"

    @property
    def etcd_url(self) -> str:
        return f"http://{LOOPBACK}:{self.etcd_port}"

    @property
    def ca_pem(self) -> bytes:
        if self.ca is None:
            raise ControlPlaneError("control plane not started")
        return self.ca.cert_pem

    @property
    def log_files(self) -> dict[str, Path]:
        return {"etcd": self.etcd_log, "kube-apiserver": self.apiserver_log}

    def kubeconfig(self, user: str = "admin") -> str:
        """Path of the kubeconfig for ``user`` (``admin``, ``alice`` or one from add_user)."""
        try:
            return str(self._kubeconfigs[user])
        except KeyError:
            raise KeyError(f"no kubeconfig for user {user!r}; known: {sorted(self._kubeconfigs)}")

    def client_cert(self, user: str = "admin") -> tuple[str, str]:
        """(cert_path, key_path) of ``user``'s client certificate (PEM)."""
        cert, key = self._client_certs[user]
        return str(cert), str(key)

    def kubectl_cmd(self, *args: str, user: str = "admin") -> list[str]:
        return [self.kubectl, "--kubeconfig", self.kubeconfig(user), *args]

    def running(self) -> bool:
        return all(p is not None and p.poll() is None for p in (self._etcd, self._apiserver))

    # -- certificates / users ------------------------------------------------------------

    def issue_cert(self, name: str, **kwargs) -> tuple[Path, Path]:
        """Sign a leaf cert with the cluster CA (e.g. a webhook serving or client cert).

        kwargs as :meth:`CertificateAuthority.issue`. Returns (cert_path, key_path)
        under ``work_dir/pki``.
        """
        assert self.ca is not None, "call start() (or _init_pki()) first"
        cert, key = self.ca.issue(name, **kwargs)
        safe = name.replace(":", "_").replace("/", "_")
        return (
            _write(self.pki_dir / f"{safe}.crt", cert, 0o644),
            _write(self.pki_dir / f"{safe}.key", key),
        )

    def add_user(self, name: str, groups: Iterable[str] = ()) -> str:
        """Create a client-certificate user (CN=name, O=groups) and its kubeconfig."""
        cert, key = self.ca.issue(name, organizations=list(groups), client=True)
        self._client_certs[name] = (
            _write(self.pki_dir / f"{name}-client.crt", cert, 0o644),
            _write(self.pki_dir / f"{name}-client.key", key),
        )
        path = self.work_dir / f"{name}.kubeconfig"
        kc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(self.ca.cert_pem).decode(),
                    },
                }
            ],
            "users": [
                {
                    "name": name,
                    "user": {
                        "client-certificate-data": base64.b64encode(cert).decode(),
                        "client-key-data": base64.b64encode(key).decode(),
                    },
                }
            ],
            "contexts": [{"name": name, "context": {"cluster": "e2e", "user": name, "namespace": "default"}}],
            "current-context": name,
            "preferences": {},
        }
        _write(path, yaml.safe_dump(kc, sort_keys=False).encode())
        self._kubeconfigs[name] = path
        return str(path)

    def _init_pki(self) -> None:
        self.pki_dir.mkdir(parents=True, exist_ok=True)
        self.ca = self._given_ca or CertificateAuthority()
        _write(self.ca_path, self.ca.cert_pem, 0o644)
        sans = [LOOPBACK, *self.extra_sans]
        ips = [a for a in sans if _is_ip(a)]
        self.serving_cert, self.serving_key = self.issue_cert(
            "kube-apiserver",
            dns_names=["localhost", *(a for a in sans if not _is_ip(a))],
            ip_addresses=list(dict.fromkeys(ips)),
            server=True,
        )
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.sa_key_path = _write(self.pki_dir / "sa.key", _pem_key(sa_key))
        self.sa_pub_path = _write(
            self.pki_dir / "sa.pub",
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
            0o644,
        )

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> "ControlPlane":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "ControlPlane":
        for b in (self.etcd_bin, self.apiserver_bin):
            if not os.access(b, os.X_OK):
                raise ControlPlaneError(f"{b} missing; run hack/build-control-plane.sh")
        if self._apiserver is not None:
            raise ControlPlaneError("already started")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        _live.add(self)
        t0 = time.monotonic()
        for attempt in range(3):
            try:
                # Free when picked; another process may take one before etcd or
                # kube-apiserver binds it: then start over on new ports.
                self.etcd_port, self.etcd_peer_port, self.port = free_ports(3)
                self._init_pki()
                self._start_etcd()
                self._wait_etcd(t0 + self.startup_timeout)
                self._start_apiserver()
                self.add_user("admin", ["system:masters"])
                self.add_user("alice")
                self._wait_apiserver(t0 + self.startup_timeout)
                break
            except ControlPlaneError:
                self.stop()
                if attempt == 2 or not self._port_taken():
                    raise
                _live.add(self)
                shutil.rmtree(self.etcd_data_dir, ignore_errors=True)
                self._etcd = self._apiserver = None
            except BaseException:
                self.stop()
                raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _port_taken(self) -> bool:
        for log in (self.etcd_log, self.apiserver_log):
            try:
                if "address already in use" in log.read_text(errors="replace"):
                    return True
            except OSError:
                pass
        return False

    def stop(self) -> None:
        """SIGTERM both processes, SIGKILL after ``stop_grace`` s. Idempotent."""
        _stop_process(self._apiserver, self.stop_grace)
        _stop_process(self._etcd, self.stop_grace)
        for f in self._logs:
            try:
                f.close()
            except OSError:
                pass
        self._logs = []
        _live.discard(self)

    def wipe(self) -> None:
        """stop() and delete work_dir."""
        self.stop()
        shutil.rmtree(self.work_dir, ignore_errors=True)

    # -- internals -------------------------------------------------------------------------

    def _spawn(self, args: list[str], log: Path) -> subprocess.Popen:
        f = open(log, "ab")
        self._logs.append(f)
        prefix = ["nsenter", f"--net=/run/netns/{self.netns}"] if self.netns else []
        proc = subprocess.Popen(
            prefix + args,
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            cwd=self.work_dir,
            start_new_session=True,  # not hit by the terminal's Ctrl-C; stop() handles it
        )
        if self.pid_dir is not None:
            self.pid_dir.mkdir(parents=True, exist_ok=True)
            (self.pid_dir / f"{Path(args[0]).name}.pid").write_text(str(proc.pid))
        return proc

    def _start_etcd(self) -> None:
        peer = f"http://{LOOPBACK}:{self.etcd_peer_port}"
        args = [
            str(self.etcd_bin),
            "--name=e2e",
            f"--data-dir={self.etcd_data_dir}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=e2e={peer}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync",  # test data only; much faster on slow disks
            "--log-level=warn",
        ]
        self.etcd_args = args
        self._etcd = self._spawn(args, self.etcd_log)

    def _wait_etcd(self, deadline: float) -> None:
        last = ""
        while time.monotonic() < deadline:
            if self._etcd.poll() is not None:
                raise ControlPlaneError(
                    f"etcd exited with {self._etcd.returncode}; {self.etcd_log} tail:\n{_tail(self.etcd_log)}"
                )
            try:
                _, raw = urlopen_in(self.netns, f"{self.etcd_url}/health", timeout=2)
                body = json.loads(raw or b"{}")
                if body.get("health") == "true":
                    return
                last = str(body)
            except (OSError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise ControlPlaneError(
            f"etcd not healthy at {self.etcd_url} in time (last: {last}); tail:\n{_tail(self.etcd_log)}"
        )

    def _start_apiserver(self) -> None:
        gates = ",".join(f"{k}={'true' if v else 'false'}" for k, v in self.feature_gates.items())
        args = [
            str(self.apiserver_bin),
            f"--bind-address={self.bind_address}",
            f"--advertise-address={self.advertise_address}",
            f"--secure-port={self.port}",
            f"--etcd-servers={self.etcd_url}",
            f"--cert-dir={self.pki_dir / 'apiserver'}",
            f"--tls-cert-file={self.serving_cert}",
            f"--tls-private-key-file={self.serving_key}",
            f"--client-ca-file={self.ca_path}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            f"--service-account-issuer=https://{LOOPBACK}:{self.port}",
            f"--service-account-key-file={self.sa_pub_path}",
            f"--service-account-signing-key-file={self.sa_key_path}",
            f"--authorization-mode={self.authorization_mode}",
            # The default reconciler would write a loopback IP into the "kubernetes"
            # Endpoints, which validation rejects (log noise only); nothing needs it.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
        ]
        # Audit events for the audit-enforcement test: only the test CRD group, metadata level
        # (the level that carries webhooks' audit annotations); nothing else is logged.
        self.audit_log_path = self.work_dir / "audit.log"
        policy_path = self.work_dir / "audit-policy.yaml"
        policy_path.write_text(AUDIT_POLICY)
        args += [f"--audit-policy-file={policy_path}", f"--audit-log-path={self.audit_log_path}",
                 "--audit-log-mode=blocking", "--audit-log-maxsize=50"]
        if self.disable_admission_plugins:
            args.append(f"--disable-admission-plugins={','.join(self.disable_admission_plugins)}")
        if self.runtime_config:
            args.append(f"--runtime-config={','.join(self.runtime_config)}")
        if gates:
            args.append(f"--feature-gates={gates}")
        args += self.extra_args
        self.apiserver_args = args
        self._apiserver = self._spawn(args, self.apiserver_log)

    def ssl_context(self, user: str | None = "admin") -> ssl.SSLContext:
        """SSL context trusting the cluster CA, presenting ``user``'s client cert."""
        ctx = ssl.create_default_context(cafile=str(self.ca_path))
        if user is not None:
            cert, key = self.client_cert(user)
            ctx.load_cert_chain(cert, key)
        return ctx

    def _wait_apiserver(self, deadline: float) -> None:
        ctx = self.ssl_context("admin")
        last = ""
        while time.monotonic() < deadline:
            if self._apiserver.poll() is not None:
                raise ControlPlaneError(
                    f"kube-apiserver exited with {self._apiserver.returncode}; "
                    f"{self.apiserver_log} tail:\n{_tail(self.apiserver_log)}"
                )
            if self._etcd.poll() is not None:
                raise ControlPlaneError(f"etcd died; tail:\n{_tail(self.etcd_log)}")
            try:
                status, _ = urlopen_in(self.netns, f"{self.url}/readyz", timeout=5, context=ctx)
                if status == 200:
                    return
                last = f"HTTP {status}"
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}: {exc.read()[-500:].decode(errors='replace')}"
            except (OSError, ssl.SSLError) as exc:
                last = str(exc)
            time.sleep(0.5)
        raise ControlPlaneError(
            f"kube-apiserver not ready at {self.url}/readyz within {self.startup_timeout}s "
            f"(last: {last}); {self.apiserver_log} tail:\n{_tail(self.apiserver_log)}"
        )
