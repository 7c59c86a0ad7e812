"""A Connection (webhook/server/connection.py) driven without a socket, as
uvicorn tests its protocols: bytes fed to `data_received`, answers read from
a mock transport, time moved by hand. The app behind it is the real one
(webhook.server.app.create_app with the default config), the answers are
parsed by httptools' own response parser."""
from __future__ import annotations

import dataclasses
import json

import httptools
from prometheus_client import REGISTRY

from webhook import config as config_mod
from webhook.cluster.view import DisabledView, NeedsNetwork
from webhook.server.app import State, create_app
from webhook.server.budget import BodyBudget
from webhook.server.connection import Connection
from tests.server.harness import admission_request
from tests.unit.helpers import podgroup


class MockTransport:
    def __init__(self):
        self.buffer = b""
        self.closed = self.aborted = False
        self.reading = True
        self.read_limit = None

    def write(self, data: bytes) -> None:
        assert not self.closed, "a write after close"
        self.buffer += data

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


class Serving:
    """What webhook/server/worker.py's Serving gives a connection."""

    def __init__(self, max_body: int = 65536, budget: int | None = None, idle: float = 30.0,
                 body_timeout: float = 10.0):
        cfg = config_mod.load(None)
        cfg = dataclasses.replace(cfg, server=dataclasses.replace(cfg.server, maxBodyBytes=max_body))
        self.loop = MockLoop()
        self.admission = create_app(State(cfg, DisabledView()))
        self.idle, self.body_timeout, self.port, self.pool = idle, body_timeout, 8443, None
        self.budget = BodyBudget(budget if budget is not None else 4 * max_body)
        self.open: set = set()

    def opened(self, conn) -> None:
        self.open.add(conn)

    def closed(self, conn) -> None:
        self.open.discard(conn)

    def connect(self) -> tuple[Connection, MockTransport]:
        conn, transport = Connection(self), MockTransport()
        conn.connection_made(transport)
        return conn, transport


def lookup_first(serving: Serving) -> None:
    """The loop's first judgment needs the API server (NeedsNetwork: what a PodGroup not
    yet in the watch cache does; tests/server/test_unreachable_cluster.py shows the real
    one), so it is judged again in the pool: `serving.loop.pool.pop().run()`."""
    admission = serving.admission
    real, waits = admission.answer, []

    def answer(route, raw, content_type):
        if not waits:
            waits.append(1)
            raise NeedsNetwork("a PodGroup not in the cache")
        return real(route, raw, content_type)
    admission.answer = answer


def connected(**kw) -> tuple[Connection, MockTransport]:
    return Serving(**kw).connect()


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
