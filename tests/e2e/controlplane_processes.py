"""The processes of a test control plane (tests/e2e/controlplane.py): free loopback
ports, etcd's and kube-apiserver's command lines and readiness waits, starting a
process with its log (in a network namespace when asked) and stopping it."""
from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
from pathlib import Path

from tests.e2e.netns import urlopen_in

LOOPBACK = "127.0.0.1"
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


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<cannot read {path}: {exc}>"
    return "\n".join(text.splitlines()[-lines:])


def stop_process(proc: subprocess.Popen | None, grace: float) -> None:
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


class Processes:
    """Mixin of ControlPlane: etcd and kube-apiserver as processes."""

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
                    f"etcd exited with {self._etcd.returncode}; {self.etcd_log} tail:\n{tail(self.etcd_log)}"
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
            f"etcd not healthy at {self.etcd_url} in time (last: {last}); tail:\n{tail(self.etcd_log)}"
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


    def _wait_apiserver(self, deadline: float) -> None:
        ctx = self.ssl_context("admin")
        last = ""
        while time.monotonic() < deadline:
            if self._apiserver.poll() is not None:
                raise ControlPlaneError(
                    f"kube-apiserver exited with {self._apiserver.returncode}; "
                    f"{self.apiserver_log} tail:\n{tail(self.apiserver_log)}"
                )
            if self._etcd.poll() is not None:
                raise ControlPlaneError(f"etcd died; tail:\n{tail(self.etcd_log)}")
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
            f"(last: {last}); {self.apiserver_log} tail:\n{tail(self.apiserver_log)}"
        )
