"""What a connection reads (webhook/server/connection.py): the bytes fed to
httptools (llhttp) become Requests (request.py), each head checked when it
ends, each body claimed from the worker's budget (budget.py) before it is
read. The head's limit holds however the bytes arrive: counted as they come
while the head is under way, and from its parts when it ends in a read that
also crosses the limit. Chunked framing and trailers count with the head, so
llhttp never gathers more than the limit (its trailer values grow by copying).
A request read whole, or refused, goes to the connection's queue in order;
after a refusal or a request that ends the connection nothing more is read."""
from __future__ import annotations

import logging

import httptools

from webhook import metrics
from webhook.server.body import Body
from webhook.server.request import HEAD_LIMIT, HttpRequest, Phase, Refusal, too_large

log = logging.getLogger("workload_webhook.server")


class Reader:
    def __init__(self, conn):
        self.conn = conn                # webhook.server.connection.Connection
        self.budget = conn.shared.budget
        self.parser = httptools.HttpRequestParser(self)
        self.current: HttpRequest | None = None      # being read
        self.stopped = False            # nothing more is read
        self.head_bytes = 0             # since the last request was read whole: an upper bound of the head's
        self.body_bytes = 0
        self.waiting_for = 0            # the claim the current request waits for

    @property
    def in_body(self) -> bool:
        req = self.current
        return req is not None and (req.phase is Phase.BODY or req.phase is Phase.WAITING)

    def feed(self, data: bytes, in_body: bool) -> None:
        """`in_body`: the current request's body was being read before these bytes."""
        req = self.current
        if in_body:
            body_before = self.body_bytes
        else:
            self.head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass                        # refused at the end of its head (HttpRequest.head_refusal)
        except httptools.HttpParserError as exc:
            if not self.stopped:        # after a request that ends the connection, what follows is not read
                text = (str(exc).splitlines() or ["unreadable"])[0][:120]
                where = "request body could not be read: " if self.in_body else "malformed request: "
                # chunked followed by another coding (RFC 9112 §6.3), as llhttp finds it in the field
                why = "transfer_coding" if "Invalid `Transfer-Encoding`" in text else "malformed"
                self.refuse(Refusal(400, where + text, why))
        cur = self.current
        if cur is None or self.stopped:
            return
        if cur.phase is Phase.HEAD:
            if self.head_bytes > HEAD_LIMIT:
                self.refuse(Refusal(400, f"request head is larger than {HEAD_LIMIT} bytes", "head_too_large"))
        elif in_body and cur is req and cur.coding is not None:
            if self.body_bytes == body_before:          # framing or trailer bytes only
                cur.framing += len(data)
                if (refusal := cur.trailer_refusal()) is not None:
                    self.refuse(refusal)
            else:
                cur.framing = 0

    def ended(self) -> None:
        """The client closed its side."""
        if self.current is not None and not self.stopped:
            body = self.current.body
            got = body.size if body is not None else 0
            self.refuse(Refusal(400, f"request ended early (the client closed its side after {got} body bytes)",
                                "incomplete"))
        self.stopped = True

    def refuse(self, refusal: Refusal) -> None:
        """The current request (or the bytes that were to start one) cannot be read to
        its end: it is answered with `refusal` in its turn, then the connection closes."""
        if self.stopped:
            return
        req = self.current or HttpRequest()
        self.let_go()
        req.refuse(refusal)
        req.keep_alive = False
        self.stopped = True
        self.conn.enqueue(req)
        metrics.HTTP_REFUSED.labels(refusal.why).inc()
        log.info("refused: %s", refusal.reason, extra={"status": refusal.status, "reason": refusal.why})

    def let_go(self) -> None:
        """The current request is read no further: its claim goes back, or leaves the queue."""
        req, self.current = self.current, None
        if req is None:
            return
        if req.phase is Phase.WAITING:
            self.budget.forget(self)
            self.conn.resume_for_budget()
        self.conn.give_back(req)

    def budget_granted(self) -> None:
        """The worker's body budget holds this request's claim now (BodyBudget.wait)."""
        req = self.current
        if req is None or req.phase is not Phase.WAITING or self.conn.closed:
            self.budget.give_back(self.waiting_for)
            return
        req.held, req.phase = self.waiting_for, Phase.BODY
        self.conn.resume_for_budget()
        self.conn.body_started()

    # -- parser callbacks (httptools) ---------------------------------------

    def on_message_begin(self) -> None:
        if not self.stopped:
            self.current = HttpRequest()

    def on_url(self, url: bytes) -> None:
        req = self.current
        if req is not None and (refusal := req.add_url(url)) is not None:
            self.refuse(refusal)

    def on_header(self, name: bytes, value: bytes) -> None:
        req = self.current
        if req is None:
            return
        refusal = req.add_field(name, value) if req.phase is Phase.HEAD else req.add_trailer(name, value)
        if refusal is not None:
            self.refuse(refusal)

    def on_headers_complete(self) -> None:
        req = self.current
        if req is None:
            return
        parser = self.parser
        req.method = parser.get_method()
        req.keep_alive = parser.should_keep_alive()
        limit = self.conn.shared.max_body
        refusal = req.head_refusal(parser.get_http_version, parser.should_upgrade())
        if refusal is None and req.continue_due and req.declared is not None and req.declared > limit:
            refusal = too_large(limit)          # do not invite a body that will be refused
        if refusal is not None:
            self.refuse(refusal)
            return
        req.body = Body(limit, req.declared)
        size = min(req.claim(limit), self.budget.total)
        if size == 0 or self.budget.take(size):
            req.held, req.phase = size, Phase.BODY
            self.conn.body_started()
            return
        req.phase, self.waiting_for = Phase.WAITING, size
        self.conn.wait_for_budget()
        self.budget.wait(self, size)            # may grant at once (budget_granted)

    def on_body(self, data: bytes) -> None:
        req = self.current
        if req is None:
            return
        self.body_bytes += len(data)
        body = req.body
        if not body.feed(data):                 # more than the drain budget: answer now, then close
            self.refuse(too_large(body.limit))
        elif body.over and req.held:            # nothing more of it is kept
            self.conn.give_back(req)

    def on_message_complete(self) -> None:
        req = self.current
        if req is None:
            return
        if req.body.over:                       # read to its end and dropped: answered 413, then closed
            self.refuse(too_large(req.body.limit))
            return
        self.current = None
        self.head_bytes = 0
        if req.phase is Phase.WAITING:          # it came whole with its head: nothing more to wait for
            self.budget.forget(self)
            self.conn.resume_for_budget()
        req.phase = Phase.READY
        req.content = req.body.result()
        req.body = None
        if req.held and len(req.content) < req.held:
            self.budget.give_back(req.held - len(req.content))     # a chunked body smaller than its claim
            req.held = len(req.content)
        if not req.keep_alive:
            self.stopped = True
        self.conn.enqueue(req)
