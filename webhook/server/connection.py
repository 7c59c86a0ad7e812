"""One HTTP/1.1 connection, after its TLS handshake: requests parsed by
httptools (llhttp, Node's parser, in C), answered in order, each phase bounded.

- the head of a request, kept-alive idle time before it included:
  `server.idleTimeoutSeconds`; a head over HEAD_LIMIT bytes, a request line
  over LINE_LIMIT or more than FIELDS_LIMIT fields is a 400;
- the body: `server.idleTimeoutSeconds` + IO_SLACK_SECONDS without a byte;
  over `server.maxBodyBytes` it is read and dropped, then answered 413
  (webhook/server/body.py);
- an answer the client does not read: the same bound, then the connection is
  dropped.

Admission requests are judged right here in the event loop (a Pod join reads
the watch cache and never waits). A judgment that would have to ask the API
server (a cache miss, PG-2's Workload, a namespace's labels) raises
NeedsNetwork before it does, and is judged again in a thread of the worker's
pool, so one slow lookup never holds the other connections. Every answer is
one write; a malformed request gets a one-line 400 and the connection closes.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from typing import Protocol

import httptools

from webhook.admission import review
from webhook.cluster.view import NeedsNetwork
from webhook.server import body as request_body
from webhook.server import wsgi_call

log = logging.getLogger("workload_webhook.server")

IO_SLACK_SECONDS = 5.0
LINE_LIMIT = 8190
FIELDS_LIMIT = 100
HEAD_LIMIT = 64 * 1024
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 413: "Content Too Large",
           500: "Internal Server Error"}
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class Serving(Protocol):
    """What a connection needs of the worker that owns it (webhook/server/worker.py)."""
    loop: asyncio.AbstractEventLoop
    admission: object           # webhook.server.admit.Admission
    idle: float                 # server.idleTimeoutSeconds
    port: int
    pool: Executor              # for judgments that wait for the API server

    def opened(self, conn: "Connection") -> None: ...

    def closed(self, conn: "Connection") -> None: ...


class Request:
    __slots__ = ("method", "url", "headers", "body", "keep_alive", "content_type")

    def __init__(self, method: bytes, url: bytes, headers: list, body, keep_alive: bool, content_type: str | None):
        self.method, self.url, self.headers, self.body = method, url, headers, body
        self.keep_alive, self.content_type = keep_alive, content_type


class Connection(asyncio.Protocol):
    def __init__(self, serving: Serving):
        self.serving = serving
        self.loop = serving.loop
        self.parser = httptools.HttpRequestParser(self)
        self.transport = None
        self.pending: list[Request] = []
        self.busy = False             # an answer is being made (in the pool: waiting for it)
        self.write_blocked = False
        self.closed = False
        self.close_after = False      # answer what is in progress, then close
        self.refused = False          # a request could not be read: nothing more is
        self.answered = 0
        self.head_bytes = 0
        self._reset()
        self.deadline: float | None = None
        self._timer = None
        self._timer_at = 0.0

    # -- connection events -------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.serving.opened(self)
        self._expect(self.serving.idle)

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.serving.closed(self)

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        if self.in_body:
            self._expect(self.serving.idle + IO_SLACK_SECONDS)
        else:
            self.head_bytes += len(data)      # an approximation: bytes since the last body
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.error = (400, "protocol upgrades are not supported")
        except httptools.HttpParserError as exc:
            text = (str(exc).splitlines() or ["unreadable"])[0][:120]
            self.error = (400, ("request body could not be read: " if self.in_body else "malformed request: ") + text)
        if self.error is None and self.in_head and self.head_bytes > HEAD_LIMIT:
            self.error = (400, f"request head is larger than {HEAD_LIMIT} bytes")
        if self.error is not None:
            self._refuse(*self.error)
            return
        self._next()

    def eof_received(self):
        if self.in_head or self.in_body:
            got = self.body.size if self.body is not None else 0
            self._refuse(400, f"request ended early (the client closed its side after {got} body bytes)")
        return None     # close our side too

    def pause_writing(self) -> None:
        self.write_blocked = True
        self._expect(self.serving.idle + IO_SLACK_SECONDS)

    def resume_writing(self) -> None:
        self.write_blocked = False
        self._expect(self.serving.idle)
        self._next()

    def shutdown(self) -> None:
        """The worker stops: connections idle after an answer close now, the
        others after their (first or current) answer."""
        self.close_after = True
        if self.answered and not self.busy and not self.pending and not (self.in_head or self.in_body):
            self.closed = True
            self.transport.close()

    # -- parser callbacks (httptools) ---------------------------------------

    def _reset(self) -> None:
        self.url, self.headers, self.body = b"", [], None
        self.declared = self.content_type = None
        self.expect_continue = False
        self.in_head = self.in_body = False
        self.error: tuple[int, str] | None = None

    def on_message_begin(self) -> None:
        if self.error is not None:      # a refused request: what follows it is not read
            return
        self._reset()
        self.in_head = True

    def on_url(self, url: bytes) -> None:
        self.url += url
        if len(self.url) > LINE_LIMIT and self.error is None:
            self.error = (400, f"request line is longer than {LINE_LIMIT} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        if self.error is not None:
            return
        if len(self.headers) > FIELDS_LIMIT:
            self.error = (400, f"more than {FIELDS_LIMIT} header fields")
            return
        lower = name.lower()
        if lower == b"content-length":
            self.declared = int(value) if value.strip().isdigit() else None
        elif lower == b"content-type":
            self.content_type = value.decode("latin-1")
        elif lower == b"expect" and value.lower() == b"100-continue":
            self.expect_continue = True

    def on_headers_complete(self) -> None:
        self.in_head, self.in_body = False, True
        self.body = request_body.Body(self.serving.admission.limit, self.declared)
        self._expect(self.serving.idle + IO_SLACK_SECONDS)
        if self.expect_continue and self.error is None:
            if self.body.over:          # do not invite a body that will be refused
                self.error = (413, "")
            else:
                self.transport.write(CONTINUE)

    def on_body(self, data: bytes) -> None:
        if self.error is None and not self.body.feed(data):
            self.error = (413, "")      # more than the drain budget: answer now, then close

    def on_message_complete(self) -> None:
        self.in_body = False
        self.head_bytes = 0
        if self.error is not None:
            return
        self.pending.append(Request(self.parser.get_method(), self.url, self.headers, self.body.result(),
                                    self.parser.should_keep_alive(), self.content_type))
        if len(self.pending) > 1:       # pipelined requests wait for their turn; do not read more meanwhile
            self.transport.pause_reading()

    # -- answers ------------------------------------------------------------

    def _next(self) -> None:
        while self.pending and not self.busy and not self.write_blocked and not self.closed:
            req = self.pending.pop(0)
            if not self.pending:
                self.transport.resume_reading()
            self._answer(req)

    def _answer(self, req: Request) -> None:
        admission = self.serving.admission
        try:
            parsed = httptools.parse_url(req.url)
            path = parsed.path.decode("latin-1")
        except httptools.HttpParserInvalidURLError:
            self._refuse(400, "malformed request target")
            return
        route = admission.route(req.method, path)
        if route is None:
            self._wsgi(req, path, (parsed.query or b"").decode("latin-1"))
            return
        try:
            status, payload, close = admission.answer(route, req.body, req.content_type)
        except NeedsNetwork:
            self.busy, self.deadline = True, None
            future = self.loop.run_in_executor(self.serving.pool, admission.answer, route, req.body,
                                               req.content_type)
            future.add_done_callback(lambda f: self._answered(req, f))
            return
        except Exception:
            log.exception("admission failed")
            status, payload, close = 500, review.encode({"error": "internal error; see the webhook's log"}), True
        self._send(status, [b"Content-Type: application/json"], payload, close or not req.keep_alive)

    def _answered(self, req: Request, future: asyncio.Future) -> None:
        self.busy = False
        if self.closed:
            return
        try:
            status, payload, close = future.result()
        except Exception:
            log.exception("admission failed")
            status, payload, close = 500, review.encode({"error": "internal error; see the webhook's log"}), True
        self._send(status, [b"Content-Type: application/json"], payload, close or not req.keep_alive)
        self._next()

    def _wsgi(self, req: Request, path: str, query: str) -> None:
        if isinstance(req.body, Exception):
            self._refuse(413, "")
            return
        try:
            status, headers, data = wsgi_call.call(self.serving.admission.fallback, req.method.decode("latin-1"),
                                                   path, query, req.headers, req.body, self.serving.port)
        except Exception:
            log.exception("request failed")
            self._send(500, [b"Content-Type: application/json"],
                       review.encode({"error": "internal error; see the webhook's log"}), True)
            return
        lines = [f"{k}: {v}".encode("latin-1") for k, v in headers if k.lower() not in ("connection", "content-length")]
        head_only = req.method == b"HEAD"
        if head_only:       # the length of the body a GET would get, and no body
            length = next((v for k, v in headers if k.lower() == "content-length"), str(len(data)))
            lines.append(b"Content-Length: " + length.encode("latin-1"))
            data = b""
        self._send(status.encode("latin-1"), lines, data, not req.keep_alive, length=not head_only)

    def _refuse(self, status: int, reason: str) -> None:
        """A request that cannot be read to its end: a one-line answer, then close."""
        if status == 413 and not reason:
            limit = self.serving.admission.limit
            reason = f"request body is larger than {limit} bytes (server.maxBodyBytes)"
        self.pending.clear()
        self.refused = True
        if not self.busy:
            self._send(status, [b"Content-Type: application/json"], review.encode({"error": reason}), True)
        else:
            self.close_after = True
        self._reset()

    def _send(self, status, headers: list[bytes], payload: bytes, close: bool, length: bool = True) -> None:
        if self.closed:
            return
        close = close or self.close_after
        line = status if isinstance(status, bytes) else f"{status} {REASONS.get(status, '')}".encode()
        head = [b"HTTP/1.1 " + line, *headers]
        if length:
            head.append(b"Content-Length: %d" % len(payload))
        if close:
            head.append(b"Connection: close")
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + payload)
        self.answered += 1
        if close:
            self.closed = True
            self.transport.close()
        else:
            self._expect(self.serving.idle)

    # -- the one timer ------------------------------------------------------

    def _expect(self, seconds: float) -> None:
        """Something must happen within `seconds` from now, or the connection is dropped."""
        self.deadline = self.loop.time() + seconds
        if self._timer is None or self._timer_at > self.deadline:
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = self.deadline
            self._timer = self.loop.call_at(self.deadline, self._expired)

    def _expired(self) -> None:
        self._timer = None
        if self.closed or self.busy or self.deadline is None:
            return
        if self.loop.time() < self.deadline:
            self._timer_at = self.deadline
            self._timer = self.loop.call_at(self.deadline, self._expired)
            return
        self.closed = True
        if self.in_head or self.in_body or self.write_blocked:
            self.transport.abort()        # stalled mid-request: nothing to say to it
        else:
            self.transport.close()        # kept alive and idle: a clean close
