"""Attacks on the real server (gunicorn + the event-loop worker, TLS):
stalled connections of every kind, hostile bodies, shutdown under load. All
traffic goes to loopback; every loop is bounded in count and time."""
from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import statistics
import threading
import time

import pytest

from tests.server.harness import REPO, Server, admission_request, read_answers
from tests.unit.helpers import podgroup, trainjob

STALLED_PER_KIND = 200
HALF_CLIENT_HELLO = b"\x16\x03\x01\x02\x00\x01"


def _tcp(server: Server) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s.setblocking(True)
    return s


def _tls(server: Server) -> ssl.SSLSocket:
    return server.ssl_context().wrap_socket(_tcp(server), server_hostname="localhost")


def _validate_body(uid: str = "uid-1") -> bytes:
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": admission_request(podgroup(), uid=uid)}).encode()


class SlowHeaders:
    """Connections that send a request head one byte at a time, round robin."""

    HEAD = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"X-Padding: " + b"a" * 200 + b"\r\n")

    def __init__(self, socks: list[ssl.SSLSocket]):
        self.socks, self.stop = socks, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i, deadline = 0, time.monotonic() + 120
        while not self.stop.is_set() and time.monotonic() < deadline and i < len(self.HEAD):
            for s in self.socks:
                try:
                    s.send(self.HEAD[i:i + 1])
                except OSError:
                    pass
            i += 1
            self.stop.wait(0.25)


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """True when the server closes (EOF or reset) this connection within `within` s."""
    sock.settimeout(within)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    except (TimeoutError, socket.timeout):
        return False
    except OSError:
        return True


def _wait_for(done, what: str, timeout: float = 30) -> None:
    """Until `done()`: the state a step needs, never a fixed sleep."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.02)


class KeptAlive:
    """A client that was connected before the attack: one call on its connection every
    half second (so that it never idles out, --idle-timeout), each must be answered."""

    def __init__(self, server: Server):
        self.server, self.conn, self.stop = server, server.connection(timeout=5), threading.Event()
        self.statuses: list = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            try:
                status, _ = self.server.review("/validate", admission_request(podgroup()), conn=self.conn)
            except (OSError, ssl.SSLError, ValueError) as exc:
                status = repr(exc)
            self.statuses.append(status)

    def __enter__(self) -> "KeptAlive":
        assert self.server.review("/validate", admission_request(podgroup()), conn=self.conn)[0] == 200
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)
        self.conn.close()


def _steady_client(server: Server, count: int) -> tuple[list[float], list[str]]:
    """`count` keep-alive /validate calls; each must be answered within the client timeout."""
    latencies, failures = [], []
    conn = server.connection(timeout=5)
    for i in range(count):
        started = time.perf_counter()
        try:
            status, body = server.review("/validate", admission_request(podgroup(), uid=f"u{i}"), conn=conn)
            if status != 200 or not body["response"]["allowed"]:
                failures.append(f"status {status}")
        except (OSError, ssl.SSLError, ValueError) as exc:
            failures.append(repr(exc))
            conn.close()
            conn = server.connection(timeout=5)
        latencies.append(time.perf_counter() - started)
    conn.close()
    return latencies, failures


@pytest.fixture
def bounded_server(tmp_path):
    with Server(str(tmp_path), extra=["--cluster", "disabled", "--handshake-timeout", "3",
                                      "--idle-timeout", "4"]) as s:
        yield s


def test_stalled_connections_of_every_kind_do_not_stop_admission(bounded_server):
    server = bounded_server
    with KeptAlive(server) as kept_alive:           # a client that was already connected
        silent = [_tcp(server) for _ in range(STALLED_PER_KIND)]
        half_hello = [_tcp(server) for _ in range(STALLED_PER_KIND)]
        for s in half_hello:
            s.sendall(HALF_CLIENT_HELLO)
        idle_tls = [_tls(server) for _ in range(STALLED_PER_KIND)]
        slow = SlowHeaders([_tls(server) for _ in range(STALLED_PER_KIND)])
        slow.thread.start()
        try:
            latencies, failures = _steady_client(server, 300)
            calls = len(kept_alive.statuses)
            _wait_for(lambda: len(kept_alive.statuses) > calls, "a call of the kept-alive client after the load")
            health = server.get("/healthz")[0]
        finally:
            slow.stop.set()
            slow.thread.join(5)
    assert failures == [], failures[:5]
    assert kept_alive.statuses and set(kept_alive.statuses) == {200}, kept_alive.statuses
    assert health == 200
    latencies.sort()
    print(f"\n{4 * STALLED_PER_KIND} stalled connections held; 300 /validate calls: "
          f"p50 {statistics.median(latencies) * 1000:.1f} ms, p99 {latencies[296] * 1000:.1f} ms, "
          f"max {latencies[-1] * 1000:.1f} ms; the kept-alive client answered {len(kept_alive.statuses)} times")
    # The server frees every stalled connection itself: handshake 3 s, head/idle 4 s.
    for group in (silent, half_hello, idle_tls, slow.socks):
        assert all(_closed_by_server(s, within=15) for s in group[:20])
    for group in (silent, half_hello, idle_tls, slow.socks):
        for s in group:
            s.close()


def _raw_request(server: Server, head: bytes, body_parts: list[bytes], read_timeout: float = 10) -> tuple[int, bytes]:
    s = _tls(server)
    s.settimeout(read_timeout)
    try:
        s.sendall(head)
        for part in body_parts:
            s.sendall(part)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head_part, _, rest = data.partition(b"\r\n\r\n")
        status = int(head_part.split(b" ", 2)[1])
        length = next((int(line.split(b":", 1)[1]) for line in head_part.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(rest) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        return status, rest
    finally:
        s.close()


CHUNKED_HEAD = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")


def test_ADM_6_malformed_chunk_size_is_a_400_not_a_500(server):
    status, body = _raw_request(server, CHUNKED_HEAD, [b"zz\r\n{}\r\n0\r\n\r\n"])
    assert status == 400, body
    assert "could not be read" in json.loads(body)["error"]
    assert "Traceback" not in server.log()


def test_chunked_body_is_judged(server):
    payload = _validate_body()
    parts = [b"%x\r\n" % len(payload[:100]) + payload[:100] + b"\r\n",
             b"%x\r\n" % len(payload[100:]) + payload[100:] + b"\r\n", b"0\r\n\r\n"]
    status, body = _raw_request(server, CHUNKED_HEAD, parts)
    assert status == 200 and json.loads(body)["response"]["allowed"] is True


def test_ADM_6_chunked_body_over_the_limit_is_a_readable_413(server):
    # The module's server runs with --max-body-bytes 1048576.
    chunk = b"x" * 65536
    parts = [b"%x\r\n" % len(chunk) + chunk + b"\r\n"] * 20 + [b"0\r\n\r\n"]
    status, body = _raw_request(server, CHUNKED_HEAD, parts)
    assert status == 413 and "larger than 1048576 bytes" in json.loads(body)["error"]


def test_ADM_6_declared_body_over_the_limit_is_read_then_answered_413(server):
    size = 2 * 1048576
    head = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % size)
    status, body = _raw_request(server, head, [b" " * size])
    assert status == 413 and "server.maxBodyBytes" in json.loads(body)["error"]
    assert '"refused: request body is larger than 1048576 bytes (server.maxBodyBytes)","status":413,' \
           '"reason":"body_too_large"' in server.log()


def test_ADM_6_body_that_stops_short_is_a_400(server):
    head = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 5000\r\nConnection: close\r\n\r\n")
    s = _tls(server)
    s.settimeout(10)
    s.sendall(head + _validate_body()[:100])
    s.shutdown(socket.SHUT_WR)    # half-close: the body ends early
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (OSError, ssl.SSLError):
            break
        if not chunk:
            break
        data += chunk
    s.close()
    # Either a one-line 400 or a closed connection; never a 500.
    assert b" 500 " not in data.split(b"\r\n", 1)[0]
    assert "Traceback" not in server.log()


def test_ADM_6_default_limit_admits_an_update_of_two_objects_at_etcd_size(tmp_path):
    """etcd's 1.5 MiB object limit, twice (object and oldObject), plus the envelope."""
    big = "x" * (1536 * 1024)
    obj = trainjob({"schedulingPolicy": {"gang": {"minCount": 2}}}, replicas=4)
    obj["metadata"]["annotations"] = {"big": big}
    old = json.loads(json.dumps(obj))
    old["metadata"]["finalizers"] = ["example.com/keep"]
    with Server(str(tmp_path), config=f"{REPO}/examples/config.yaml", extra=["--cluster", "disabled"]) as server:
        status, body = server.review("/validate", admission_request(obj, operation="UPDATE", old=old))
    assert status == 200 and body["response"]["allowed"] is True, body


def test_long_strings_from_the_request_make_bounded_log_lines(tmp_path):
    name = "n" * 200_000
    obj = podgroup(schedulingPolicy={"gang": {"minCount": 0}})
    obj["metadata"]["name"] = name
    obj["metadata"]["labels"] = {"k" * 100_000: "v"}
    with Server(str(tmp_path), extra=["--cluster", "disabled"]) as server:
        req = admission_request(obj)
        req["uid"] = "u" * 100_000
        status, body = server.review("/validate", req)
        assert status == 200 and body["response"]["allowed"] is False
        with open(server.log_path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    assert lines and max(len(line) for line in lines) < 4096, max(len(line) for line in lines)
    assert any('"verdict":"denied"' in line for line in lines)


def test_sigterm_under_load_loses_no_accepted_connection(tmp_path):
    """Connections the kernel accepted before the listener closed are answered;
    after it closed, new ones are refused (never reset after connecting)."""
    server = Server(str(tmp_path), extra=["--cluster", "disabled"]).start()
    answered, lost, refused = [], [], []
    stop_at = time.monotonic() + 20

    def client() -> None:
        body = _validate_body()
        while time.monotonic() < stop_at:
            try:
                s = _tcp(server)
            except ConnectionRefusedError:
                refused.append(1)
                return
            try:
                t = server.ssl_context().wrap_socket(s, server_side=False, server_hostname="localhost")
                t.settimeout(10)
                t.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                data = b""
                while True:
                    chunk = t.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                t.close()
                (answered if data.startswith(b"HTTP/1.1 200") else lost).append(data[:80])
            except (OSError, ssl.SSLError) as exc:
                lost.append(repr(exc))

    threads = [threading.Thread(target=client, daemon=True) for _ in range(6)]
    for t in threads:
        t.start()
    _wait_for(lambda: len(answered) > 10 or lost, "the load to get going")
    before = len(answered)
    os.killpg(server.proc.pid, signal.SIGTERM)
    for t in threads:
        t.join(30)
    server.stop()
    assert before > 10, "the load never got going"
    assert lost == [], (lost[:5], server.log()[-3000:])
    assert refused, "the server never stopped accepting"
    assert "the listeners refuse new connections" in server.log()     # the SYN filter went on first


def test_at_max_connections_a_worker_stops_accepting_until_one_closes(tmp_path):
    with Server(str(tmp_path), workers=1, extra=["--cluster", "disabled", "--max-connections", "10"]) as server:
        held = [_tls(server) for _ in range(10)]         # ten connections, handshakes done, idle
        queued = _tcp(server)                             # the kernel queues one more; the worker does not take it
        queued.settimeout(1.5)
        with pytest.raises((TimeoutError, socket.timeout)):
            server.ssl_context().wrap_socket(queued, server_hostname="localhost")
        queued.close()
        held.pop().close()                                # one closes: the worker accepts again
        status, _, body = server.get("/healthz")
        assert status == 200 and json.loads(body) == {"status": "ok"}
        for s in held:
            s.close()


def test_sigterm_answers_every_request_sent_on_a_kept_alive_connection(tmp_path):
    """Four keep-alive clients at about 100 requests/s and two sending 1.7 MB bodies;
    SIGTERM to the whole process group. Every request sent on an open connection is
    answered (the last answer of each connection says Connection: close), none meets a
    connection closed under it; once the listeners are closed, new connections are refused."""
    server = Server(str(tmp_path), extra=["--cluster", "disabled"]).start()
    small = _validate_body()
    big_obj = podgroup()
    big_obj["metadata"]["annotations"] = {"pad": "x" * 1_700_000}
    big = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                      "request": admission_request(big_obj)}).encode()
    sigterm_at, lock = [0.0], threading.Lock()
    sent_after, closed_answers, lost, answered = [], [], [], {}

    def client(body: bytes, pause: float) -> None:
        request = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(body) + body)
        sock, deadline = None, time.monotonic() + 20
        while time.monotonic() < deadline:
            if sock is None:
                try:
                    sock = _tls(server)
                except (OSError, ssl.SSLError):
                    return                          # refused: the listeners are closed
            after = sigterm_at[0] > 0
            try:
                sock.sendall(request)
                answer = (read_answers(sock, 1) or [None])[0]
            except (OSError, ssl.SSLError):
                answer = None
            with lock:
                if answer is None or answer[0] != 200:
                    lost.append((after, answer and answer[0]))
                elif after:
                    sent_after.append(1)
                else:
                    answered[threading.get_ident()] = answered.get(threading.get_ident(), 0) + 1
                if answer is not None and answer[1].get("connection") == "close":
                    closed_answers.append(after)
            if answer is None or answer[1].get("connection") == "close":
                sock.close()
                sock = None
            time.sleep(pause)
        if sock is not None:
            sock.close()

    threads = [threading.Thread(target=client, args=(small, 0.01), daemon=True) for _ in range(4)]
    threads += [threading.Thread(target=client, args=(big, 0.05), daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    # Every client mid-stream: each has had answers on its connection (the big ones too).
    def every_client_answered() -> bool:
        with lock:
            return bool(lost) or (len(answered) == len(threads) and min(answered.values()) >= 3)
    _wait_for(every_client_answered, "every client to be answered")
    sigterm_at[0] = time.monotonic()
    os.killpg(server.proc.pid, signal.SIGTERM)
    for t in threads:
        t.join(30)
    server.stop()
    print(f"\n{len(sent_after)} requests answered after SIGTERM, {closed_answers.count(True)} with Connection: close")
    assert lost == [], (lost, server.log()[-3000:])
    # The stop met every client mid-stream: each one's last answer said Connection: close.
    assert len(closed_answers) >= len(threads) - 1 and sent_after, (closed_answers, sent_after)
