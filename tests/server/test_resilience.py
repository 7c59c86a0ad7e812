"""Certificate rotation and worker loss under continuous load, against the
real server: bounded loops that stop by themselves."""
import os
import signal
import ssl
import threading
import time

from cryptography import x509

from webhook import certs
from tests.server.harness import Server, admission_request
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


def test_certificate_rotation_drops_no_request(tmp_path):
    with Server(str(tmp_path), extra=["--cluster", "disabled"]) as server:
        with Load(server) as load:
            load.wait_for(20)
            before = set(load.serials)
            for _ in range(3):  # three rotations of the serving certificate, same CA
                certs.generate(server.cert_dir, ca=certs.load_ca(server.cert_dir))
                load.wait_for(60)
        assert load.failures == [], load.failures[:5]
        assert len(load.serials - before) >= 1, "no connection ever saw a rotated certificate"
        with open(os.path.join(server.cert_dir, "tls.crt"), "rb") as f:
            newest = x509.load_pem_x509_certificate(f.read()).serial_number
        served, deadline = set(), time.monotonic() + 5   # each worker checks the files once a second
        while newest not in served and time.monotonic() < deadline:
            conn = server.connection()
            conn.connect()
            served.add(x509.load_der_x509_certificate(conn.sock.getpeercert(binary_form=True)).serial_number)
            conn.close()
        assert newest in served


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
