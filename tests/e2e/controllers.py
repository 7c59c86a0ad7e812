"""A real kube-controller-manager (built by hack/build-control-plane.sh) against a
node-less ControlPlane of tests/e2e/controlplane.py, on loopback only.

It runs only the controllers the Job -> Workload -> PodGroup -> Pods -> claim
path needs (kubernetes v1.37.2, cmd/kube-controller-manager/names):

- ``job-controller``: with ``WorkloadWithJob`` it creates a Job's Workload and
  PodGroup (pkg/controller/job/job_scheduling_manager.go) and its Pods with
  ``spec.schedulingGroup``;
- ``resourceclaim-controller``: generates the ResourceClaims of Pods and, with
  ``DRAWorkloadResourceClaims``, of PodGroups (one claim per PodGroup claim,
  owned by the PodGroup, named in ``podgroup.status.resourceClaimStatuses``);
- ``garbage-collector-controller``: deletes what a deleted Job, PodGroup or Pod owned;
- ``podgroup-protection-controller``: removes the ``scheduling.k8s.io/podgroup-protection``
  finalizer once a deleted PodGroup has no Pods left;
- ``serviceaccount-controller``: the ``default`` ServiceAccount of every namespace, which
  the ServiceAccount admission plugin needs before it admits a Pod;
- ``namespace-controller``: finishes deleting a test's namespace.

Least privilege: the manager itself authenticates as ``system:kube-controller-manager``
(a client certificate of the cluster CA; the bootstrap ClusterRole of that name lets it
list and watch, and mint ServiceAccount tokens in kube-system), and with
``--use-service-account-credentials`` every controller acts as its own ServiceAccount
``kube-system/<controller>`` bound to the bootstrap role ``system:controller:<controller>``
(TokenRequest: no token Secrets, so no serviceaccount-token controller and no key file).

The ControlPlane these tests use is a separate instance (:func:`control_plane`):
ServiceAccount admission on (the session cluster disables it), and a garbage collector
or a finalizer-removing controller must not act on the other tests' objects."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Sequence

from tests.e2e.controlplane import LOOPBACK, ControlPlane

#: The user the manager's own client certificate names; bootstrap RBAC binds the
#: ClusterRole system:kube-controller-manager to it.
USER = "system:kube-controller-manager"

#: Canonical names (aliases would do too: job, garbagecollector, ...).
JOB_PATH_CONTROLLERS: tuple[str, ...] = (
    "job-controller",
    "resourceclaim-controller",
    "garbage-collector-controller",
    "podgroup-protection-controller",
    "serviceaccount-controller",
    "namespace-controller",
)


class ControllerManagerError(RuntimeError):
    """kube-controller-manager did not start (the message carries its log tail)."""


def control_plane(bin_dir: str, work_dir: str | os.PathLike, **kwargs) -> ControlPlane:
    """A ControlPlane for the controller manager: every admission plugin the API server
    enables by default, ServiceAccount included (DEFAULT_DISABLED_ADMISSION_PLUGINS, which
    turns it off for the node-less session cluster, is left as it is)."""
    return ControlPlane(bin_dir, work_dir, disable_admission_plugins=(), **kwargs)


class ControllerManager:
    """kube-controller-manager on loopback: no leader election, no serving port (nothing
    dials it), the API server's feature gates, its log at -v=2."""

    def __init__(self, bin_dir: str, cluster: ControlPlane, work_dir: str | os.PathLike,
                 controllers: Sequence[str] = JOB_PATH_CONTROLLERS, startup_timeout: float = 90.0):
        self.binary = os.path.join(bin_dir, "kube-controller-manager")
        self.cluster, self.controllers = cluster, tuple(controllers)
        self.work_dir = Path(work_dir)
        self.log_path = self.work_dir / "kube-controller-manager.log"
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None
        self.startup_seconds: float | None = None
        self.args: list[str] = []
        self._log = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> "ControllerManager":
        if not os.access(self.binary, os.X_OK):
            raise ControllerManagerError(f"{self.binary} is missing: hack/build-control-plane.sh builds it")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        kubeconfig = self.cluster.add_user(USER)
        gates = ",".join(f"{k}={'true' if v else 'false'}" for k, v in self.cluster.feature_gates.items())
        self.args = [
            self.binary,
            f"--kubeconfig={kubeconfig}",
            "--use-service-account-credentials=true",
            f"--controllers={','.join(self.controllers)}",
            f"--feature-gates={gates}",
            "--leader-elect=false",
            "--secure-port=0",                  # no serving port: nothing to dial, nothing to bind
            f"--bind-address={LOOPBACK}",
            "--concurrent-job-syncs=2",
            "-v=2",
        ]
        t0 = time.monotonic()
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.work_dir, start_new_session=True)
        try:
            self._wait_started(t0 + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _wait_started(self, deadline: float) -> None:
        """Every controller asked for has logged "Controller starting..." and got its
        ServiceAccount (its own credentials work)."""
        waiting: list[str] = list(self.controllers)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ControllerManagerError(f"kube-controller-manager exited with {self.proc.returncode}; "
                                             f"{self.log_path} tail:\n{self.tail()}")
            log = self.log()
            waiting = [c for c in self.controllers if not re.search(
                rf'"Controller starting\.\.\." controller="{re.escape(c)}"', log)]
            if not waiting:
                return
            time.sleep(0.3)
        raise ControllerManagerError(f"kube-controller-manager did not start {', '.join(waiting)} within "
                                     f"{self.startup_timeout:.0f} s; {self.log_path} tail:\n{self.tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "ControllerManager":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- logs --------------------------------------------------------------------------

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def lines_about(self, *words: str, lines: int = 40) -> str:
        """The last log lines that mention every one of ``words`` (a Job's name, ...)."""
        hits = [line for line in self.log().splitlines() if all(w in line for w in words)]
        return "\n".join(hits[-lines:])
