"""A Connection (webhook/server/connection.py) driven without a socket, as
uvicorn tests its protocols: bytes fed to `data_received`, answers read from
a mock transport, time moved by hand. The app behind it is the real one
(webhook.server.app.build_admission with the default config), the answers are
parsed by httptools' own response parser."""
from __future__ import annotations

import dataclasses
import json

import httptools
import pytest
from prometheus_client import REGISTRY

from webhook import config as config_mod
from webhook.view import DisabledView
from webhook.server.app import State, build_admission
from webhook.server.budget import BodyBudget
from webhook.server.connection import Connection
from tests.server.harness import admission_request
from tests.unit.helpers import podgroup


class MockTransport:
    """As uvloop's TLS transport by default (no write_eof: close() flushes, then sends
    close_notify); `half_close`: one that can write_eof, as a plain TCP transport."""

    def __init__(self, half_close: bool = False):
        self.buffer = b""
        self.closed = self.aborted = self.eof = False
        self.reading = True
        self.read_limit = None
        self.half_close = half_close

    def write(self, data: bytes) -> None:
        assert not self.closed, "a write after close"
        assert not self.eof, "a write after write_eof"
        self.buffer += data

    @property
    def ended(self) -> bool:
        """The server ended its side: closed (over TLS: close_notify after the answer), or half-closed."""
        return self.closed or self.eof

    def can_write_eof(self) -> bool:
        return self.half_close

    def write_eof(self) -> None:
        assert self.half_close and not self.eof and not self.closed, "write_eof twice, after close, or unsupported"
        self.eof = True

    def close(self) -> None:
        assert not self.closed, "closed twice"
        self.closed = True

    def abort(self) -> None:
        self.closed = self.aborted = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        assert self.reading, "paused twice"
        self.reading = False

    def resume_reading(self) -> None:
        assert not self.reading, "resumed while reading"
        self.reading = True

    def set_read_buffer_limits(self, high=None, low=None) -> None:
        self.read_limit = high

    def take(self) -> bytes:
        data, self.buffer = self.buffer, b""
        return data


class Timer:
    def __init__(self, loop, when, callback):
        self.loop, self.when, self.callback, self.cancelled = loop, when, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class PoolFuture:
    """What run_in_executor returns: the call runs when the test says so."""

    def __init__(self, fn, args):
        self.fn, self.args, self.callbacks, self._result, self._error = fn, args, [], None, None

    def add_done_callback(self, cb) -> None:
        self.callbacks.append(cb)

    def run(self) -> None:
        try:
            self._result = self.fn(*self.args)
        except Exception as exc:        # noqa: BLE001 - handed to the callback, as a real future does
            self._error = exc
        for cb in self.callbacks:
            cb(self)

    def result(self):
        if self._error is not None:
            raise self._error
        return self._result


class MockLoop:
    def __init__(self):
        self.now = 1000.0
        self.timers: list[Timer] = []
        self.pool: list[PoolFuture] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when, callback) -> Timer:
        timer = Timer(self, when, callback)
        self.timers.append(timer)
        return timer

    def run_in_executor(self, pool, fn, *args) -> PoolFuture:
        future = PoolFuture(fn, args)
        self.pool.append(future)
        return future

    def advance(self, seconds: float) -> None:
        """Move the clock, firing every timer that falls due on the way, in order."""
        end = self.now + seconds
        while True:
            due = sorted((t for t in self.timers if not t.cancelled and t.when <= end), key=lambda t: t.when)
            if not due:
                break
            timer = due[0]
            self.timers.remove(timer)
            self.now = max(self.now, timer.when)
            timer.callback()
        self.now = end


class Shared:
    """What webhook/server/worker.py's EventLoopServer shares with a connection
    (webhook/server/connection.py Shared)."""

    def __init__(self, max_body: int = 65536, budget: int | None = None, idle: float = 30.0,
                 body_timeout: float = 10.0, view=None):
        cfg = config_mod.load(None)
        cfg = dataclasses.replace(cfg, server=dataclasses.replace(cfg.server, maxBodyBytes=max_body))
        self.loop = MockLoop()
        self.admission = build_admission(State(cfg, view or DisabledView()))
        self.max_body, self.idle, self.body_timeout, self.port, self.pool = max_body, idle, body_timeout, 8443, None
        self.budget = BodyBudget(budget if budget is not None else 4 * max_body)
        self.open: set = set()

    def opened(self, conn) -> None:
        self.open.add(conn)

    def closed(self, conn) -> None:
        self.open.discard(conn)

    def connect(self, half_close: bool | None = None) -> tuple[Connection, MockTransport]:
        conn = Connection(self)
        transport = MockTransport(HALF_CLOSE[0] if half_close is None else half_close)
        conn.connection_made(transport)
        return conn, transport


def refusing_cache(*podgroups: dict):
    """The server's real view (webhook/cluster/cache.py ClusterCache), its PodGroup
    store holding `podgroups` as if listed, its API server a loopback port where
    nothing listens: a lookup that must ask it (a missing PodGroup, a Workload, a
    namespace's labels) is declared blocking, and fails at once when it may ask."""
    import socket

    from kubernetes import client

    from webhook.cluster import projection
    from webhook.cluster.cache import ClusterCache
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    configuration = client.Configuration(host=f"https://127.0.0.1:{port}")
    configuration.retries = 0
    cache = ClusterCache(client.ApiClient(configuration), timeout=1.0)
    project = projection.FOR_PLURAL["podgroups"]
    listed = {f"{pg['metadata']['namespace']}/{pg['metadata']['name']}": projection.pack(project(pg))
              for pg in podgroups}
    cache.informers["podgroups"].restore("v1beta1", "1", listed)
    return cache


def waiting_review(uid: str) -> bytes:
    """A review whose judgment must wait for the API server behind `lookup_first`'s
    view: a PodGroup made from a Workload's template (PG-2 reads the Workload by GET)."""
    return review_body(uid, podgroup(workloadRef={"workloadName": "wl", "templateName": "t"}))


def lookup_first(shared: Shared) -> None:
    """The view becomes `refusing_cache()`: a `waiting_review` is judged in the pool
    (`shared.loop.pool.pop().run()`), a plain `review_body` at once."""
    shared.admission.state.view = refusing_cache()


def connected(half_close: bool | None = None, **kw) -> tuple[Connection, MockTransport]:
    return Shared(**kw).connect(half_close)


HALF_CLOSE = [False]    # what connect() makes by default: set by `both_transports`


@pytest.fixture(params=["tls", "tcp"])
def both_transports(request):
    """Each test of a module that uses it runs over both transports: uvloop's TLS one (the
    answer that ends a connection is followed by close()) and one that can half-close
    (write_eof, and the connection lingers)."""
    HALF_CLOSE[0] = request.param == "tcp"
    yield request.param
    HALF_CLOSE[0] = False


# --- requests and answers ---------------------------------------------------------

def review_body(uid: str = "uid-1", obj: dict | None = None) -> bytes:
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": admission_request(obj or podgroup(), uid=uid)}).encode()


def post(body: bytes, path: str = "/validate", extra: bytes = b"", version: bytes = b"1.1",
         host: bytes | None = b"Host: webhook.example:8443\r\n") -> bytes:
    return (b"POST %s HTTP/%s\r\n%sContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n"
            % (path.encode(), version, host or b"", extra, len(body)) + body)


def get(path: str = "/healthz", extra: bytes = b"", version: bytes = b"1.1",
        host: bytes | None = b"Host: webhook.example\r\n") -> bytes:
    return b"GET %s HTTP/%s\r\n%s%s\r\n" % (path.encode(), version, host or b"", extra)


def chunked(body: bytes, parts: int = 2, trailer: bytes = b"") -> bytes:
    size = -(-len(body) // parts)
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n" + trailer + b"\r\n"


class Answer:
    def __init__(self):
        self.status, self.headers, self.body, self.done = 0, {}, b"", False

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None

    def json(self) -> dict:
        return json.loads(self.body)


class _Reader:
    def __init__(self):
        self.answers: list[Answer] = []
        self.parser = httptools.HttpResponseParser(self)

    def on_message_begin(self):
        self.answers.append(Answer())

    def on_header(self, name, value):
        self.answers[-1].headers.setdefault(name.decode().lower(), []).append(value.decode())

    def on_headers_complete(self):
        self.answers[-1].status = self.parser.get_status_code()

    def on_body(self, data):
        self.answers[-1].body += data

    def on_message_complete(self):
        self.answers[-1].done = True


def answers(data: bytes) -> list[Answer]:
    """The answers in `data` (interim 100 answers included), each whole."""
    reader = _Reader()
    reader.parser.feed_data(data)
    assert all(a.done for a in reader.answers), f"an answer is cut short: {data[-200:]!r}"
    return reader.answers


def only_answer(transport: MockTransport) -> Answer:
    """The one answer the transport got."""
    found = answers(transport.buffer)
    assert len(found) == 1, [a.status for a in found]
    return found[0]


def refused(reason: str) -> float:
    """How many requests the connections refused for `reason` (the metric, in this process)."""
    return REGISTRY.get_sample_value("workload_webhook_http_refused_total", {"reason": reason}) or 0.0
