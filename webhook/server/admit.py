"""The two admission routes (ADM-1..7) as a plain WSGI function in front of
Flask: a Pod burst sends every Pod through here, and Flask's request context
was 15 % of a worker's time in the profile (docs/architecture.md, "Design notes"). Health,
readiness and metrics stay Flask routes. Every outcome is one response built
here: 200 with the AdmissionReview, or 400/413 with a one-line reason."""
from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterable


from webhook import engine, kinds, metrics
from webhook.admission import review
from webhook.server import body as request_body
from webhook.server.logs import bounded, request_fields

log = logging.getLogger("workload_webhook.server")

ROUTES = {"/validate": ("validate", engine.validate), "/mutate": ("mutate", engine.mutate)}
STATUS = {200: "200 OK", 400: "400 Bad Request", 413: "413 Content Too Large"}


class Admission:
    """WSGI: POST /validate and /mutate here, everything else to `fallback` (Flask)."""

    def __init__(self, state, fallback: Callable):
        self.state, self.fallback = state, fallback
        cfg = state.config
        self.known = {k.kind for k in (*kinds.SCHEDULING_KINDS, kinds.POD)} | {t.kind for t in cfg.targets}

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        route = ROUTES.get(environ.get("PATH_INFO", ""))
        if route is None or environ.get("REQUEST_METHOD") != "POST":
            return self.fallback(environ, start_response)
        status, payload, close = self.admit(route[0], route[1], environ)
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
        if close:
            headers.append(("Connection", "close"))
        start_response(STATUS[status], headers)
        return [payload]

    def _kind(self, req: engine.Request) -> str:
        """Metric labels only for kinds this service judges: hostile kinds must not grow the series."""
        return req.kind if req.kind in self.known else "other"

    def admit(self, endpoint: str, judge: Callable[..., Any], environ: dict) -> tuple[int, bytes, bool]:
        started = time.perf_counter()
        limit = self.state.config.server.maxBodyBytes
        try:
            length = environ.get("CONTENT_LENGTH")
            declared = int(length) if length and length.isdigit() else None
            # gunicorn's own stream: chunked bodies decoded.
            raw = request_body.read(environ["wsgi.input"], declared, limit)
            parsed = review.parse(raw, environ.get("CONTENT_TYPE"))
        except request_body.TooLarge:
            metrics.REJECTED_INPUT.labels("too_large").inc()
            log.warning("refused: body over %d bytes", limit, extra={"endpoint": endpoint, "status": 413})
            return 413, _error(f"request body is larger than {limit} bytes (server.maxBodyBytes)"), True
        except request_body.Unreadable as exc:
            metrics.REJECTED_INPUT.labels("unreadable").inc()
            log.info("refused: %s", exc.reason, extra={"endpoint": endpoint, "status": 400})
            return 400, _error(exc.reason), True
        except review.BadReview as exc:
            metrics.REJECTED_INPUT.labels("malformed").inc()
            log.info("refused: %s", exc.reason, extra={"endpoint": endpoint, "status": exc.status})
            return exc.status, _error(exc.reason), False
        req = parsed.request
        try:
            verdict = judge(req, self.state.config, self.state.view)
            answer = review.respond(parsed.uid, verdict, parsed)
            outcome = "allowed" if verdict.allowed else "denied"
            if verdict.allowed and verdict.patch:
                outcome = "patched"
        except Exception:
            log.exception("engine failed", extra={"uid": bounded(parsed.uid), "endpoint": endpoint,
                                                  "kind": bounded(req.kind)})
            metrics.ERRORS.labels(endpoint).inc()
            answer, outcome, verdict = review.internal_error(parsed.uid), "error", None
        if verdict is not None and (verdict.warned or verdict.audits):
            _record_enforced(verdict, req, parsed, endpoint)
        elapsed = time.perf_counter() - started
        metrics.REQUESTS.labels(endpoint, self._kind(req), req.operation, outcome).inc()
        metrics.LATENCY.labels(endpoint).observe(elapsed)
        # Denials and errors always; allowed requests only at debug (their cost is per Pod of a burst).
        level = logging.DEBUG if outcome in ("allowed", "patched") else logging.INFO
        if log.isEnabledFor(level):
            log.log(level, "%s %s", endpoint, outcome, extra=request_fields(parsed, endpoint, outcome, elapsed, verdict))
        return 200, review.encode(answer), False


def _record_enforced(verdict, req: engine.Request, parsed, endpoint: str) -> None:
    """Violations enforced as warn/audit: a metric per rule and one log line (the request
    itself may still be denied by another violation)."""
    for action, errors in (("warn", verdict.warned), ("audit", verdict.audits)):
        for e in errors:
            metrics.ENFORCED.labels(e.rule or "", action).inc()
        if errors:
            log.info("%s %s with %d %s violation(s)", endpoint, "admitted" if verdict.allowed else "denied",
                     len(errors), action,
                     extra={**request_fields(parsed, endpoint, action, 0.0, None),
                            "violations": [bounded(str(e)) for e in errors[:20]]})


def _error(reason: str) -> bytes:
    return review.encode({"error": reason})
