"""Starts the real `workload-webhook serve` (gunicorn over TLS) on a free
loopback port and talks HTTPS to it. Shared by the server tests and bench/."""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(RuntimeError):
    """The caller's fixed port was taken by another process before gunicorn bound it."""


class Server:
    def __init__(self, workdir: str, config: str | None = None, workers: int = 2, extra: list[str] | None = None,
                 env: dict | None = None):
        self.workdir = workdir
        self.cert_dir = os.path.join(workdir, "certs")
        self.port = free_port()
        self.port_fixed = False          # set when a restart must keep the registered port
        self.log_path = os.path.join(workdir, "serve.log")
        self.args = [sys.executable, "-m", "webhook", "serve", "--port", str(self.port), "--cert-dir", self.cert_dir,
                     "--workers", str(workers), "--log-format", "json", *(extra or [])]
        if config:
            self.args += ["--config", config]
        self.env = {**os.environ, **(env or {})}
        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30, port_attempts: int = 3) -> "Server":
        """Start and wait for /healthz. The port was free when picked, but another
        process may take it before gunicorn binds: then a new port, up to
        `port_attempts` times (a port set by the caller is kept)."""
        for attempt in range(port_attempts):
            self._log = open(self.log_path, "ab")
            log_start = self._log.tell()
            self.proc = subprocess.Popen(self.args, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT,
                                         env=self.env, start_new_session=True)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self._port_taken(log_start) and self.port_fixed:
                    self.stop(kill=True)
                    raise PortTaken(self.port)
                if self._port_taken(log_start) and attempt + 1 < port_attempts:
                    self.stop(kill=True)
                    self.port = free_port()
                    self.args[self.args.index("--port") + 1] = str(self.port)
                    break
                if self.proc.poll() is not None:
                    raise RuntimeError(f"serve exited with {self.proc.returncode}:\n{self.log()}")
                if os.path.exists(os.path.join(self.cert_dir, "ca.crt")):
                    try:    # a short timeout to connect: the port may be another process's that never answers;
                        # ours may be slow to answer on a busy machine, and a client that gave up mid-request
                        # would be counted (a dropped handshake, a refusal) before the test looks
                        probe = self.connection(timeout=1)
                        probe.connect()
                        probe.sock.settimeout(10)
                        status, _, _ = self.get("/healthz", conn=probe)
                        probe.close()
                        if status == 200:
                            return self
                    except (OSError, ssl.SSLError, http.client.HTTPException):
                        pass
                time.sleep(0.1)
            else:
                self.stop()
                raise RuntimeError(f"serve did not become healthy in {timeout}s:\n{self.log()}")
        raise RuntimeError(f"no free port in {port_attempts} attempts:\n{self.log()}")

    def _port_taken(self, offset: int) -> bool:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return b"Connection in use" in f.read()
        except OSError:
            return False

    def stop(self, kill: bool = False) -> None:
        """SIGTERM and wait; `kill`: SIGKILL, for a server that never served (gunicorn
        retries a taken port for 5 s before it looks at a SIGTERM)."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if getattr(self, "_log", None):
            self._log.close()

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def log(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()[-6000:]
        except OSError:
            return ""

    def workers(self) -> list[int]:
        """PIDs of the gunicorn workers (children of the master)."""
        out = []
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) == self.proc.pid:
                        out.append(int(pid))
                except (OSError, IndexError, ValueError):
                    pass
        return sorted(out)

    # --- HTTPS
    def ssl_context(self, **kw) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=os.path.join(self.cert_dir, "ca.crt"))
        for k, v in kw.items():
            setattr(ctx, k, v)
        return ctx

    def connection(self, timeout: float = 10, **ctx_kw) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=self.ssl_context(**ctx_kw))

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
                conn: http.client.HTTPSConnection | None = None) -> tuple[int, dict, bytes]:
        own = conn is None
        conn = conn or self.connection()
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            if own:
                conn.close()

    def get(self, path: str, **kw):
        return self.request("GET", path, **kw)

    def review(self, path: str, request: dict[str, Any], conn=None) -> tuple[int, dict]:
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()
        status, _, data = self.request("POST", path, body, {"Content-Type": "application/json"}, conn=conn)
        return status, json.loads(data)


def read_answers(sock, count: int) -> list[tuple[int, dict, bytes]]:
    """Up to `count` answers from a socket, fewer when it ends first: (status, headers, body)."""
    data, answers = b"", []
    while len(answers) < count:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return answers
            data += chunk
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers = {k.strip().lower().decode(): v.strip().decode() for k, v in (ln.split(b":", 1) for ln in lines[1:])}
        length = int(headers.get("content-length", 0)) if status != 100 else 0
        while len(data) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return answers          # cut short: not an answer
            data += chunk
        answers.append((status, headers, data[:length]))
        data = data[length:]
    return answers


def admission_request(obj: dict, operation: str = "CREATE", uid: str = "uid-1", old: dict | None = None,
                      dry_run: bool = False, namespace: str = "ml") -> dict:
    group, _, version = obj["apiVersion"].rpartition("/")
    req = {"uid": uid, "kind": {"group": group, "version": version, "kind": obj["kind"]},
           "resource": {"group": group, "version": version, "resource": obj["kind"].lower() + "s"},
           "operation": operation, "namespace": namespace, "name": obj["metadata"].get("name", ""),
           "object": obj, "dryRun": dry_run, "userInfo": {"username": "alice"}}
    if old is not None:
        req["oldObject"] = old
    return req
