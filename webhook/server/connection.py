"""One HTTP/1.1 connection, after its TLS handshake: requests parsed by
httptools (llhttp, Node's parser, in C), answered in the order they came
(pipelining), every phase bounded (docs/operations.md#settings). What it reads:
reader.py (a request and the rules its head must meet: request.py; the
worker's budget of buffered bodies: budget.py); an answer's bytes:
response.py; the deadlines: deadlines.py.

- the head, kept-alive idle time before it included: `server.idleTimeoutSeconds`,
  then 408; its size, line and field count (trailers included) are bounded: 400;
- the body claims its size from the worker's budget first: reading pauses until
  it fits, at most the idle timeout (then 503); then `server.bodyTimeoutSeconds`
  from its start to its last byte, and idle + IO_SLACK_SECONDS between two
  bytes (then 408); over `server.maxBodyBytes` it is read and dropped, then 413;
- an answer the client does not read: idle + slack, then the connection is dropped.

A refusal is the answer to the request it refuses, after the answers to those
read before it; the connection closes after it and parses nothing more, as
after a request that ends the connection. Every refusal is counted by reason
(workload_webhook_http_refused_total).

The close after an answer lingers (RFC 9112 §9.6), so that a client still
sending reads its answer instead of a reset: the write side is half-closed
once the answer is out, what still arrives is dropped unparsed until the
client closes its side, LINGER_SECONDS pass or LINGER_BYTES arrive, then the
connection closes (at a bound: aborts). Over TLS (uvloop's transport cannot
write_eof) the half-close is the TLS close_notify that transport.close()
sends after the answer; uvloop then drops what arrives until the client's
close_notify or EOF, and the linger's time bound ends it. As net/http's
closeWriteAndWait, which waits 500 ms after its half-close; here the wait ends
as soon as the client closes.

Admission requests are judged in the event loop (a Pod join reads the watch
cache and never waits); one that must wait for the API server comes back from
admit.py as `Later`, run in the worker's lookup pool (it judges only while
this connection is open), so one slow lookup never holds the other
connections. Every answer is one write.
When the worker stops, the last answer says `Connection: close`, and a
connection idle between requests closes once idle for SHUTDOWN_IDLE_GRACE: a
request already on its way is answered, not dropped.
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from concurrent.futures import Executor
from typing import Protocol

from webhook.server import response, wsgi_call
from webhook.server.admit import Later
from webhook.server.budget import BodyBudget
from webhook.server.deadlines import Deadlines
from webhook.server.reader import Reader
from webhook.server.request import HttpRequest, Phase, late

log = logging.getLogger("workload_webhook.server")

IO_SLACK_SECONDS = 5.0
SHUTDOWN_IDLE_GRACE = 1.0
# After the answer that ends a connection: the client's time to read it and close (the worker's
# TLS_CLOSE_WAIT, uvloop's own wait for the client's close_notify, is as long).
LINGER_SECONDS = 3.0
LINGER_BYTES = 16 * 1024 * 1024  # dropped meanwhile, at most
# Bytes the TLS layer reads ahead while the connection does not read (uvloop's default is
# 256 KiB): what a connection waiting for the body budget holds beyond it.
READ_AHEAD = 16 * 1024
PIPELINE, BUDGET = 1, 2         # why reading is paused
INTERNAL_ERROR = "internal error; see the webhook's log"


class Shared(Protocol):
    """What a connection shares with the other connections of its worker
    (webhook/server/worker.py EventLoopServer; tests/unit/connection_mock.py)."""
    loop: asyncio.AbstractEventLoop
    admission: object           # webhook.server.admit.Admission
    max_body: int               # server.maxBodyBytes
    idle: float                 # server.idleTimeoutSeconds
    body_timeout: float         # server.bodyTimeoutSeconds
    budget: BodyBudget          # server.bodyBudgetBytes, shared by the worker's connections
    port: int
    pool: Executor              # for judgments that wait for the API server

    def opened(self, conn: "Connection") -> None: ...

    def closed(self, conn: "Connection") -> None: ...


class Connection(asyncio.Protocol):
    def __init__(self, shared: Shared):
        self.shared = shared
        self.loop = shared.loop
        self.transport = None
        self.queue: deque[HttpRequest] = deque()  # read (or refused), to be answered in this order
        self.answering: HttpRequest | None = None  # judged in the pool
        self.paused = 0                          # PIPELINE | BUDGET
        self.write_blocked = False
        self.closing = False      # the worker stops: the last answer says Connection: close
        self.closed = False       # no more answers (a lingering connection is closed, its transport not yet)
        self.lingering = False
        self.lingered = 0         # bytes dropped while lingering
        self.last_active = self.loop.time()
        self.due = Deadlines(self.loop, self._expired)
        self.reader = Reader(self)

    # -- connection events -------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        try:
            transport.set_read_buffer_limits(high=READ_AHEAD)
        except (AttributeError, NotImplementedError):
            pass
        self.shared.opened(self)
        self.due.idle = self.loop.time() + self.shared.idle
        self.due.wake_at(self.due.idle)

    def connection_lost(self, exc) -> None:
        self.closed, self.lingering = True, False
        self.due.cancel()
        self._let_go()
        self.shared.closed(self)

    def data_received(self, data: bytes) -> None:
        if self.lingering:              # dropped, never parsed
            self.lingered += len(data)
            if self.lingered > LINGER_BYTES:
                self._end_linger(abort=True)
            return
        reader = self.reader
        if reader.stopped:
            return
        now = self.last_active = self.loop.time()
        in_body = reader.in_body
        if in_body:
            self.due.byte = now + self.shared.idle + IO_SLACK_SECONDS
        reader.feed(data, in_body)
        self._next()

    def eof_received(self):
        if self.lingering:              # the client closed its side too: the linger is over
            self._end_linger()
            return None
        self.reader.ended()
        self._next()
        return None     # close our side too

    def pause_writing(self) -> None:
        self.write_blocked = True
        self.due.write = self.loop.time() + self.shared.idle + IO_SLACK_SECONDS
        self.due.wake_at(self.due.write)

    def resume_writing(self) -> None:
        self.write_blocked = False
        self.due.idle = self.loop.time() + self.shared.idle
        if self.lingering:              # the last answer is (nearly) out: the linger starts now
            self.due.linger = self.loop.time() + LINGER_SECONDS
            self.due.wake_at(self.due.linger)
        self._next()

    def shutdown(self) -> None:
        """The worker stops: the last answer says Connection: close; a connection idle
        between requests closes once it has been idle for SHUTDOWN_IDLE_GRACE."""
        self.closing = True
        if self.reader.current is None and not self.queue and self.answering is None and not self.closed:
            self.due.wake_at(max(self.loop.time(), self.last_active + SHUTDOWN_IDLE_GRACE))

    # -- what the reader asks of the connection -------------------------------

    def enqueue(self, req: HttpRequest) -> None:
        self.queue.append(req)
        if len(self.queue) > 1:         # pipelined requests wait for their turn; do not read more meanwhile
            self._pause(PIPELINE)

    def body_started(self) -> None:
        now = self.loop.time()
        self.due.body = now + self.shared.body_timeout
        self.due.byte = now + self.shared.idle + IO_SLACK_SECONDS
        self.due.wake_at(min(self.due.body, self.due.byte))
        if self.reader.current.continue_due:
            self._send_continue_if_due()

    def wait_for_budget(self) -> None:
        self._pause(BUDGET)
        self.due.wait = self.loop.time() + self.shared.idle
        self.due.wake_at(self.due.wait)

    def resume_for_budget(self) -> None:
        self._resume(BUDGET)

    def give_back(self, req: HttpRequest) -> None:
        if req.held:
            self.shared.budget.give_back(req.held)
            req.held = 0

    # -- answers ------------------------------------------------------------

    def _next(self) -> None:
        while self.queue and self.answering is None and not self.write_blocked and not self.closed:
            req = self.queue.popleft()
            if not self.queue:
                self._resume(PIPELINE)
            self._answer(req)
        if self.reader.current is not None:
            self._send_continue_if_due()

    def _answer(self, req: HttpRequest) -> None:
        if req.refusal is not None:
            r = req.refusal
            self._send(req, r.status, [response.JSON], response.error(r.reason), True)
            return
        admission = self.shared.admission
        route = admission.route(req.method, req.path)
        if route is None:
            self._wsgi(req)
            return
        try:
            answer = admission.answer(route, req.content, req.content_type)
        except Exception:
            log.exception("admission failed")
            self._send(req, 500, [response.JSON], response.error(INTERNAL_ERROR), True)
            return
        if isinstance(answer, Later):
            req.phase, self.answering = Phase.ANSWERING, req
            future = self.loop.run_in_executor(self.shared.pool, answer.run, self.still_open)
            future.add_done_callback(lambda f: self._answered(req, f))
            return
        status, payload, close = answer
        self._send(req, status, [response.JSON], payload, close)

    def still_open(self) -> bool:
        """Read by a judgment in the lookup pool before it starts (admit.Later.run)."""
        return not self.closed

    def _answered(self, req: HttpRequest, future: asyncio.Future) -> None:
        self.answering = None
        if self.closed:
            return
        try:
            answer = future.result()
        except Exception:
            log.exception("admission failed")
            answer = None
        status, payload, close = answer or (500, response.error(INTERNAL_ERROR), True)
        self._send(req, status, [response.JSON], payload, close)
        self._next()

    def _wsgi(self, req: HttpRequest) -> None:
        try:
            status, headers, data = wsgi_call.call(self.shared.admission.fallback, req.method.decode("latin-1"),
                                                   req.path, req.query, req.headers, req.content, self.shared.port)
        except Exception:
            log.exception("request failed")
            self._send(req, 500, [response.JSON], response.error(INTERNAL_ERROR), True)
            return
        status, lines, data, length = response.from_wsgi(status, headers, data, req.method == b"HEAD")
        self._send(req, status, lines, data, False, length=length)

    def _send(self, req: HttpRequest, status, headers: list[bytes], payload: bytes, close: bool,
              length: bool = True) -> None:
        if self.closed:
            return
        close = close or not req.keep_alive or (self.closing and not self.queue and self.reader.current is None)
        self.transport.write(response.encode(status, headers, payload, close, length))
        self.give_back(req)
        now = self.last_active = self.loop.time()
        if close:
            self._linger()
        else:
            self.due.idle = now + self.shared.idle
            self.due.wake_at(min(self.due.idle, now + SHUTDOWN_IDLE_GRACE) if self.closing else self.due.idle)

    def _send_continue_if_due(self) -> None:
        """100 Continue to the request being read, once the answers before it are out and
        its body has its share of the budget (RFC 9110 §10.1.1), unless its body already comes."""
        req = self.reader.current
        if (req is not None and req.continue_due and req.phase is Phase.BODY and not self.queue
                and self.answering is None and not self.closed):
            req.continue_due = False
            if req.body.size == 0:
                self.transport.write(response.CONTINUE)

    def _close(self, abort: bool = False) -> None:
        self.closed, self.lingering = True, False
        self._let_go()      # at once: the TLS close may take a while to reach connection_lost
        if abort:
            self.transport.abort()
        elif not self.transport.is_closing():
            self.transport.close()

    def _linger(self) -> None:
        """The answer that ends the connection is written: half-close the write side,
        then drop what still arrives (data_received) until the linger ends."""
        self.closed = self.lingering = True
        self._let_go()
        if self.paused:                 # read on, so nothing is left unread at the close (a reset)
            self.paused = 0
            self.transport.resume_reading()
        self.due.linger = self.loop.time() + LINGER_SECONDS
        self.due.wake_at(self.due.linger)
        if self.transport.can_write_eof():
            self.transport.write_eof()  # a FIN once the answer is out
        else:
            self.transport.close()      # TLS: close_notify once the answer is out (see above)

    def _end_linger(self, abort: bool = False) -> None:
        self.due.cancel()
        self._close(abort)

    def _let_go(self) -> None:
        """Give back every byte of the budget this connection holds, and leave its queue."""
        self.reader.let_go()
        for req in (self.answering, *self.queue):
            if req is not None:
                self.give_back(req)
        self.queue.clear()

    def _pause(self, why: int) -> None:
        if not self.paused:
            self.transport.pause_reading()
        self.paused |= why

    def _resume(self, why: int) -> None:
        if self.paused & why:
            self.paused &= ~why
            if not self.paused and not self.closed:
                self.transport.resume_reading()

    # -- the one timer (deadlines.py) --------------------------------------

    def _late(self) -> tuple[float, str] | None:
        """When the connection must have moved on, and what is late then."""
        due = self.due
        if self.write_blocked:
            return due.write, "write"
        if self.lingering:
            return due.linger, "linger"
        req = self.reader.current
        if req is not None:
            if req.phase is Phase.HEAD:
                return due.idle, "head"
            if req.phase is Phase.WAITING:
                return due.wait, "wait"
            return (due.body, "body") if due.body <= due.byte else (due.byte, "byte")
        if self.queue or self.answering is not None:
            return None                           # ours to answer
        if self.closing:
            return min(due.idle, self.last_active + SHUTDOWN_IDLE_GRACE), "idle"
        return due.idle, "idle"

    def _expired(self) -> None:
        lateness = self._late() if not self.closed or self.lingering else None
        if lateness is None:
            return
        when, what = lateness
        if self.loop.time() < when:
            self.due.wake_at(when)
        elif what == "write":
            self._close(abort=True)           # it does not read its answers: nothing more to say to it
        elif what == "linger":
            self._end_linger(abort=True)      # it had its time to read the answer and close
        elif what == "idle":
            self._close()                     # kept alive and idle: a clean close
        else:
            self.reader.refuse(late(what, self.shared.idle, self.shared.body_timeout, IO_SLACK_SECONDS))
            self._next()
