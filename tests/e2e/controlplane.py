"""Start a real, node-less Kubernetes control plane (etcd + kube-apiserver) for tests.

Binaries come from ``hack/build-control-plane.sh`` (kube-apiserver, kubectl, etcd,
helm built from the Go module proxy). Everything listens on and dials 127.0.0.1 only.

Usage::

    from tests.e2e.controlplane import ControlPlane

    with ControlPlane(bin_dir, work_dir) as cp:
        subprocess.run([cp.kubectl, "--kubeconfig", cp.kubeconfig("admin"), "get", "ns"])

Its credentials (CA, users, kubeconfigs) are in controlplane_credentials.py, its
processes (etcd, kube-apiserver, ports, logs) in controlplane_processes.py.
Plain modules: stdlib + ``cryptography`` (certificates) + PyYAML (kubeconfigs).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import time
import weakref
from pathlib import Path
from typing import Mapping, Sequence

from tests.e2e.controlplane_credentials import Credentials
from tests.e2e.controlplane_processes import (LOOPBACK, SERVICE_CLUSTER_IP_RANGE, ControlPlaneError, Processes,
                                              free_ports, stop_process, tail)
from tests.e2e.pki import CertificateAuthority

__all__ = ["ControlPlane", "ControlPlaneError", "DEFAULT_FEATURE_GATES", "LOOPBACK", "SERVICE_CLUSTER_IP_RANGE",
           "free_ports", "tail"]

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

_live: "weakref.WeakSet[ControlPlane]" = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:  # last resort: never leave servers behind
    for cp in list(_live):
        cp.stop()


# --------------------------------------------------------------------------- control plane


class ControlPlane(Credentials, Processes):
    """etcd + kube-apiserver on 127.0.0.1, client-certificate users, kubeconfigs.

    Users: ``admin`` (O=system:masters) and ``alice`` (no groups besides
    ``system:authenticated``). More via :meth:`add_user`.

    For a real node (tests/e2e/node.py): ``netns`` runs both processes in network
    namespace /run/netns/NETNS (``nsenter --net``) and probes them there;
    ``bind_address``/``advertise_address`` and ``extra_sans`` (IPs or DNS names added to
    the serving certificate, e.g. the ``kubernetes`` Service IP and the node IP); ``ca``
    (a CA made beforehand, to sign other components' certificates); ``pid_dir`` (each
    process's PID in ``<binary>.pid`` there, for a harness's stale-run cleanup);
    ``authorization_mode`` (``Node,RBAC`` with a kubelet); ``secure_port``, the API server's
    port when fixed (6443 in a node's own namespace, where it is always free, as a Pod's
    NetworkPolicy names it after the ``kubernetes`` Service's DNAT).
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
        secure_port: int | None = None,
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
        self.secure_port = secure_port

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
    def log_files(self) -> dict[str, Path]:
        return {"etcd": self.etcd_log, "kube-apiserver": self.apiserver_log}

    def running(self) -> bool:
        return all(p is not None and p.poll() is None for p in (self._etcd, self._apiserver))

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
                self.port = self.secure_port or self.port
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
        stop_process(self._apiserver, self.stop_grace)
        stop_process(self._etcd, self.stop_grace)
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

