"""/metrics on a port of its own (server.metricsPort; issue 30): the real `serve`,
scraped over TLS (or plain HTTP) on that port while the admission port no longer
answers it; the port answers nothing but GET /metrics; only the master holds it;
and the listener's bounds (MetricsListener itself, on real sockets)."""
from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import time

import pytest
import yaml

from tests.server.harness import REPO, Server, admission_request, free_port
from tests.unit.helpers import podgroup
from webhook.server.metrics_listener import MetricsListener


def _serve(tmp_path, **server) -> tuple[Server, int]:
    metrics_port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"server": {"metricsPort": metrics_port, **server}}))
    return Server(str(tmp_path), config=str(config), extra=["--cluster", "disabled"]), metrics_port


def _get(port: int, path: str = "/metrics", ctx: ssl.SSLContext | None = None, method: str = "GET"):
    conn = (http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10) if ctx
            else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    try:
        conn.request(method, path, body=b"{}" if method == "POST" else None)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def _listening_inode(port: int) -> str:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                    return fields[9]
    raise AssertionError(f"nothing listens on {port}")


def _holds(pid: int, inode: str) -> bool:
    fd_dir = f"/proc/{pid}/fd"
    return any(os.readlink(os.path.join(fd_dir, fd)) == f"socket:[{inode}]" for fd in os.listdir(fd_dir))


def test_metrics_are_scraped_over_tls_on_their_own_port_and_not_on_the_admission_port(tmp_path):
    server, port = _serve(tmp_path)
    with server:
        ctx = server.ssl_context()             # the serving certificate, verified against the CA
        for i in range(4):                     # several requests: both workers' counts add up
            server.review("/validate", admission_request(podgroup(schedulingPolicy={}), uid=f"u{i}"))
        status, headers, body = _get(port, ctx=ctx)
        assert status == 200 and headers["Content-Type"].startswith("text/plain")
        line = next(x for x in body.decode().splitlines() if x.startswith("workload_webhook_requests_total{")
                    and 'kind="PodGroup"' in x and 'verdict="denied"' in x)
        assert float(line.rsplit(" ", 1)[1]) == 4
        # The admission port no longer serves them; the metrics port serves nothing else.
        status, _, body = server.get("/metrics")
        assert status == 404 and json.loads(body)["error"]
        for path, method, code in (("/validate", "POST", 405), ("/mutate", "POST", 405), ("/validate", "GET", 404),
                                   ("/healthz", "GET", 404), ("/metrics", "DELETE", 405)):
            status, headers, body = _get(port, path, ctx, method)
            assert status == code and body.count(b"\n") == 1 and "only GET /metrics" in json.loads(body)["error"], \
                (path, method, status, body)
        # TLS only: a plain HTTP request gets no answer.
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            _get(port)
        # Only the gunicorn master holds the listening socket, so a dying worker takes nothing with it.
        inode = _listening_inode(port)
        assert _holds(server.proc.pid, inode)
        workers = server.workers()
        assert len(workers) == 2 and not any(_holds(w, inode) for w in workers)


def test_plain_http_metrics_when_tls_is_off(tmp_path):
    server, port = _serve(tmp_path, metricsTLS=False)
    with server:
        server.review("/validate", admission_request(podgroup(schedulingPolicy={})))
        status, _, body = _get(port)
        assert status == 200 and b"workload_webhook_requests_total{" in body
        status, _, _ = _get(port, "/nothing")
        assert status == 404


def _serve_exit(tmp_path, config: dict, env: dict | None = None) -> subprocess.CompletedProcess:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    return subprocess.run([sys.executable, "-m", "webhook", "serve", "--config", str(path), "--cert-dir",
                           str(tmp_path / "certs"), "--cluster", "disabled", "--port", str(free_port())],
                          capture_output=True, text=True, timeout=60, cwd=REPO, env={**os.environ, **(env or {})})


def test_a_metrics_port_equal_to_the_admission_port_or_taken_is_refused_with_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "webhook", "serve", "--port", "18555", "--cert-dir",
                           str(tmp_path / "certs"), "--cluster", "disabled"], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env={**os.environ, "WW_METRICS_PORT": "18555"})
    assert proc.returncode == 2 and "server.metricsPort: Invalid value: 18555: must differ from server.port" in proc.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        proc = _serve_exit(tmp_path, {"server": {"metricsPort": busy}})
    assert proc.returncode != 0 and f"server.metricsPort {busy}: cannot listen on 127.0.0.1" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


# --- the listener's bounds, on real sockets

def _render():
    return b"ok_total 1.0\n", "text/plain; version=0.0.4"


def _wait_for(done, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.01)


def test_a_client_that_holds_a_connection_is_dropped_at_the_deadline_and_others_wait_for_no_one():
    listener = MetricsListener("127.0.0.1", 0, _render, max_connections=2, deadline=1.0)
    listener.start()
    try:
        silent = [socket.create_connection(("127.0.0.1", listener.port), timeout=5) for _ in range(2)]
        _wait_for(lambda: listener.serving == 2, "the listener to hold both connections")
        # Both slots are taken: a third connection is closed at once instead of queueing.
        third = socket.create_connection(("127.0.0.1", listener.port), timeout=5)
        assert third.recv(1) == b""
        third.close()
        # The silent ones (a head never sent) are dropped at the deadline; then a scrape is served.
        t0 = time.monotonic()
        assert all(s.recv(1) == b"" for s in silent)
        assert time.monotonic() - t0 < 5
        _wait_for(lambda: listener.serving == 0, "the listener to let both go")
        status, _, body = _get(listener.port)
        assert (status, body) == (200, b"ok_total 1.0\n")
    finally:
        for s in silent:
            s.close()
        listener.stop()


def test_a_head_the_listener_cannot_read_gets_a_one_line_answer():
    listener = MetricsListener("127.0.0.1", 0, _render)
    listener.start()
    try:
        with socket.create_connection(("127.0.0.1", listener.port), timeout=5) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(200)) + b"\r\n")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 431") and json.loads(body)["error"] and body.count(b"\n") == 1
        with socket.create_connection(("127.0.0.1", listener.port), timeout=5) as s:
            s.sendall(b"\x16\x03\x01 not http\r\n\r\n")
            data = s.recv(4096)
        assert data.startswith(b"HTTP/1.0 400") and b"<html" not in data.lower()
    finally:
        listener.stop()
