"""The two admission routes (ADM-1..7), answered straight from the
connection (webhook/server/connection.py) without WSGI or Flask: a Pod burst
sends every Pod through here, and Flask's request context was 15 % of a
worker's time in the profile (docs/architecture.md, "Design notes"). Health,
readiness and metrics stay Flask routes (`fallback`, a WSGI app). Every
outcome is one response built here: 200 with the AdmissionReview, or a 4xx
with a one-line reason for a body that is not one.

Where a review is judged is decided here, once. `answer` runs in the event
loop and judges at once in a Judgment that may not wait (webhook/view.py):
a view call declared `blocking` raises NeedsNetwork there before it asks the
API server, and the review comes back as `Later`, which the connection runs in
the worker's lookup pool; it judges again there only while the client still
waits. Metrics, lookups included, are counted once, with the answer given.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from webhook import engine, kinds, metrics
from webhook.admission import review
from webhook.cluster import events
from webhook.view import Judgment, NeedsNetwork
from webhook.server import response
from webhook.server.logs import bounded, enforced, request_fields

log = logging.getLogger("workload_webhook.server")

ROUTES = {"/validate": ("validate", engine.validate), "/mutate": ("mutate", engine.mutate)}
Route = tuple[str, Callable[..., Any]]


#: (status, body, whether the connection closes after it): a plain tuple, built once per Pod of a burst.
Answer = tuple[int, bytes, bool]


class Later:
    """A review whose judgment must wait for the API server: `run` it in the
    worker's lookup pool. It judges only while `still_wanted()`: a client that
    has gone costs no judgment (None then)."""

    __slots__ = ("admission", "route", "parsed", "started")

    def __init__(self, admission: "Admission", route: Route, parsed: review.Review, started: float):
        self.admission, self.route, self.parsed, self.started = admission, route, parsed, started

    def run(self, still_wanted: Callable[[], bool]) -> Answer | None:
        try:
            if not still_wanted():
                log.debug("not judged: the client has gone", extra={"uid": bounded(self.parsed.uid),
                                                                   "endpoint": self.route[0]})
                return None
            return self.admission._judged(self.route, self.parsed, self.started, may_wait=True)
        finally:
            self.admission.metrics.in_flight[self.route[0]].dec()     # in flight since `answer` said Later


class Admission:
    """POST /validate and /mutate are answered by `answer`; everything else by
    `fallback` (Flask, WSGI)."""

    def __init__(self, state, fallback: Callable):
        self.state, self.fallback = state, fallback
        cfg = state.config
        self.known = {k.kind for k in (*kinds.SCHEDULING_KINDS, kinds.POD)} | {t.kind for t in cfg.targets}
        self.metrics = metrics.AdmissionMetrics()
        self.events = events.recorder(cfg.events, state.view)      # None unless events.enabled

    @staticmethod
    def route(method: bytes, path: str) -> Route | None:
        return ROUTES.get(path) if method == b"POST" else None

    def _kind(self, req: engine.Request) -> str:
        """Metric labels only for kinds this service judges: hostile kinds must not grow the series."""
        return req.kind if req.kind in self.known else "other"

    def answer(self, route: Route, raw: bytes, content_type: str | None) -> Answer | Later:
        """The answer, judged at once without waiting for the API server; or Later,
        when the judgment must wait for it. `raw` is the whole body, within the limit
        (the HTTP layer refuses the rest: webhook/server/reader.py). A Later is in flight
        until the pool has answered it, its wait for the pool included."""
        started = time.perf_counter()
        try:
            parsed = review.parse(raw, content_type)
        except review.BadReview as exc:
            metrics.REJECTED_INPUT.labels("malformed").inc()
            self.metrics.observe(route[0], "refused", time.perf_counter() - started)
            log.info("refused: %s", exc.reason, extra={"endpoint": route[0], "status": exc.status})
            return exc.status, response.error(exc.reason), False
        judged = self._judged(route, parsed, started, may_wait=False)
        if judged is None:
            # In flight from here until Later.run has answered (a judgment in the loop is answered
            # within its turn: counting it would write the gauge twice per Pod for a value no scrape sees).
            self.metrics.in_flight[route[0]].inc()
            return Later(self, route, parsed, started)
        return judged

    def _judged(self, route: Route, parsed: review.Review, started: float, may_wait: bool) -> Answer | None:
        """The answer, every metric and log line of it; None (nothing recorded) when a
        judgment that may not wait needs the API server."""
        endpoint, judge = route
        req = parsed.request
        with Judgment(may_wait) as judgment:
            try:
                verdict = judge(req, self.state.config, self.state.view)
                answer = review.respond(parsed.uid, verdict, parsed)
                outcome = "allowed" if verdict.allowed else "denied"
                if verdict.allowed and verdict.patch:
                    outcome = "patched"
            except NeedsNetwork:
                return None
            except Exception:
                log.exception("engine failed", extra={"uid": bounded(parsed.uid), "endpoint": endpoint,
                                                      "kind": bounded(req.kind)})
                metrics.ERRORS.labels(endpoint).inc()
                answer, outcome, verdict = review.internal_error(parsed.uid), "error", None
        for resource, source in judgment.lookups:
            self.metrics.looked_up(resource, source)
        if verdict is not None and (verdict.warned or verdict.audits):
            enforced(log, parsed, endpoint, verdict)
        if outcome == "denied" and self.events is not None:
            self.events.denied(parsed, endpoint, verdict)     # queued: written by the recorder's thread
        elapsed = time.perf_counter() - started
        self.metrics.answered(endpoint, self._kind(req), req.operation, outcome, elapsed, verdict)
        # Denials and errors always; allowed requests only at debug (their cost is per Pod of a burst).
        level = logging.DEBUG if outcome in ("allowed", "patched") else logging.INFO
        if log.isEnabledFor(level):
            log.log(level, "%s %s", endpoint, outcome, extra=request_fields(parsed, endpoint, outcome, elapsed, verdict))
        return 200, review.encode(answer), False
