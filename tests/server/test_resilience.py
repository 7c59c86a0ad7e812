"""Certificate rotation and worker loss under continuous load, against the
real server: bounded loops that stop by themselves."""
import os
import signal
import socket
import ssl
import threading
import time

import pytest
from cryptography import x509

from webhook.certificates import files as certs
from tests.server.harness import PortTaken, Server, admission_request
from tests.unit.helpers import podgroup


class Load:
    """N client threads, each sending a request over a fresh TLS connection
    (a fresh handshake, so every request sees the current certificate)."""

    def __init__(self, server: Server, threads: int = 4, max_seconds: float = 30):
        self.server, self.n, self.max_seconds = server, threads, max_seconds
        self.ok = 0
        self.failures: list[tuple[float, str]] = []
        self.serials: set[int] = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def _run(self) -> None:
        deadline = time.monotonic() + self.max_seconds
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                conn = self.server.connection(timeout=5)
                conn.connect()
                serial = x509.load_der_x509_certificate(conn.sock.getpeercert(binary_form=True)).serial_number
                status, body = self.server.review("/validate", admission_request(podgroup()), conn=conn)
                conn.close()
                with self._lock:
                    if status == 200 and body["response"]["allowed"]:
                        self.ok += 1
                        self.serials.add(serial)
                    else:
                        self.failures.append((time.monotonic(), f"status {status}"))
            except (OSError, ssl.SSLError, ValueError) as exc:
                with self._lock:
                    self.failures.append((time.monotonic(), repr(exc)))

    def __enter__(self):
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(self.n)]
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self.threads:
            t.join(10)

    def wait_for(self, count: int, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        start = self.ok
        while self.ok < start + count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.ok >= start + count, f"load stalled; failures: {self.failures[-3:]}"


def _served_serial(server) -> int:
    conn = server.connection(timeout=5)
    conn.connect()
    try:
        return x509.load_der_x509_certificate(conn.sock.getpeercert(binary_form=True)).serial_number
    finally:
        conn.close()


def test_certificate_rotation_drops_no_request(tmp_path):
    """Three rotations under load; after each, a handshake must present the new
    serial (workers re-read the files at most once a second, so wait for it)
    before the next rotation starts: every rotation is really served."""
    with Server(str(tmp_path), extra=["--cluster", "disabled"]) as server:
        with Load(server) as load:
            load.wait_for(20)
            rotated = []
            for _ in range(3):  # three rotations of the serving certificate, same CA
                certs.generate(server.cert_dir, ca=certs.load_ca(server.cert_dir))
                with open(os.path.join(server.cert_dir, "tls.crt"), "rb") as f:
                    newest = x509.load_pem_x509_certificate(f.read()).serial_number
                deadline = time.monotonic() + 15
                while newest not in load.serials and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert newest in load.serials, f"rotation {len(rotated) + 1}: serial {newest} never served"
                rotated.append(newest)
                load.wait_for(20)
        assert load.failures == [], load.failures[:5]
        assert len(set(rotated)) == 3 and set(rotated) <= load.serials
        # Every worker ends on the newest certificate: within the reload interval,
        # eight fresh handshakes in a row (they land on either worker) show only it.
        deadline, seen = time.monotonic() + 10, set()
        while time.monotonic() < deadline:
            seen = {_served_serial(server) for _ in range(8)}
            if seen == {rotated[-1]}:
                break
            time.sleep(0.2)
        assert seen == {rotated[-1]}


def test_killed_worker_is_replaced_and_later_requests_succeed(tmp_path):
    with Server(str(tmp_path), workers=2, extra=["--cluster", "disabled"]) as server:
        workers = server.workers()
        assert len(workers) == 2
        with Load(server, threads=4) as load:
            load.wait_for(20)
            os.kill(workers[0], signal.SIGKILL)
            killed_at = time.monotonic()
            deadline = time.monotonic() + 20
            replaced = server.workers()
            while time.monotonic() < deadline and (len(replaced) < 2 or workers[0] in replaced):
                time.sleep(0.05)
                replaced = server.workers()
            assert len(replaced) == 2 and workers[0] not in replaced, (workers, replaced, server.log()[-2500:])
            settled = time.monotonic()
            load.wait_for(100)
        # Only requests in flight at the kill may fail: at most one per client thread.
        in_flight = [f for f in load.failures if killed_at - 0.5 <= f[0] <= settled]
        assert len(load.failures) == len(in_flight) and len(in_flight) <= load.n, load.failures
        assert all(t < settled for t, _ in load.failures)


def test_a_fixed_port_taken_by_another_process_is_reported_not_waited_for(tmp_path):
    """The chart e2e registers a URL first and starts the service on its port
    after: a port taken meanwhile must surface as PortTaken (the test then moves
    the registration), never as a 30-second wait or a server on another port."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        server = Server(str(tmp_path))
        server.port, server.port_fixed = squatter.getsockname()[1], True
        server.args[server.args.index("--port") + 1] = str(server.port)
        started = time.monotonic()
        with pytest.raises(PortTaken):
            server.start()
        assert time.monotonic() - started < 15
        assert server.proc.poll() is not None
