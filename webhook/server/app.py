"""Flask app factory: the admission routes are a thin shell around
webhook.engine; health, readiness and metrics beside them (ADM-1..7)."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from webhook import engine
from webhook.admission import review
from webhook.cluster.view import ClusterView, DisabledView
from webhook.config import Config
from webhook.server import metrics
from webhook.server import body as request_body
from webhook.server.logs import bounded, request_fields

log = logging.getLogger("workload_webhook.server")


@dataclass
class State:
    config: Config
    view: ClusterView
    certs_loaded: Callable[[], bool] = lambda: True
    sync_stalled: Callable[[], bool] = lambda: False    # certificate loop of the master stopped


def _one_line(status: int, reason: str) -> Response:
    resp = jsonify({"error": reason})
    resp.status_code = status
    return resp


def create_app(state: State) -> Flask:
    app = Flask("workload_webhook")

    known = {k for _, k in engine.CORE_KINDS} | {"Pod"} | {t.kind for t in state.config.targets}

    def known_kind(req: engine.Request) -> str:
        """Metric labels only for kinds this service judges: hostile kinds must not grow the series."""
        return req.kind if req.kind in known else "other"

    def admit(endpoint: str, judge: Callable[..., Any]) -> Response:
        started = time.perf_counter()
        limit = state.config.server.maxBodyBytes
        try:
            # gunicorn's own stream: chunked bodies decoded, no werkzeug limit in the way.
            raw = request_body.read(request.environ["wsgi.input"], request.content_length, limit)
            parsed = review.parse(raw, request.content_type)
        except request_body.TooLarge as exc:
            metrics.REJECTED_INPUT.labels("too_large").inc()
            log.warning("refused: body over %d bytes", limit, extra={"endpoint": endpoint, "status": 413})
            resp = _one_line(413, f"request body is larger than {limit} bytes (server.maxBodyBytes)")
            resp.headers["Connection"] = "close"
            return resp
        except request_body.Unreadable as exc:
            metrics.REJECTED_INPUT.labels("unreadable").inc()
            log.info("refused: %s", exc.reason, extra={"endpoint": endpoint, "status": 400})
            resp = _one_line(400, exc.reason)
            resp.headers["Connection"] = "close"
            return resp
        except review.BadReview as exc:
            metrics.REJECTED_INPUT.labels("malformed").inc()
            log.info("refused: %s", exc.reason, extra={"endpoint": endpoint, "status": exc.status})
            return _one_line(exc.status, exc.reason)
        req = parsed.request
        try:
            verdict = judge(req, state.config, state.view)
            answer = review.respond(parsed.uid, verdict, parsed)
            outcome = "allowed" if verdict.allowed else "denied"
            if verdict.allowed and verdict.patch:
                outcome = "patched"
        except Exception:
            log.exception("engine failed", extra={"uid": bounded(parsed.uid), "endpoint": endpoint,
                                                  "kind": bounded(req.kind)})
            metrics.ERRORS.labels(endpoint).inc()
            answer, outcome, verdict = review.internal_error(parsed.uid), "error", None
        elapsed = time.perf_counter() - started
        metrics.REQUESTS.labels(endpoint, known_kind(req), req.operation, outcome).inc()
        metrics.LATENCY.labels(endpoint).observe(elapsed)
        # Denials and errors always; allowed requests only at debug (their cost is per Pod of a burst).
        level = logging.DEBUG if outcome in ("allowed", "patched") else logging.INFO
        if log.isEnabledFor(level):
            log.log(level, "%s %s", endpoint, outcome, extra=request_fields(parsed, endpoint, outcome, elapsed, verdict))
        return Response(review.encode(answer), content_type="application/json")

    @app.post("/validate")
    def validate() -> Response:
        return admit("validate", engine.validate)

    @app.post("/mutate")
    def mutate() -> Response:
        return admit("mutate", engine.mutate)

    @app.get("/healthz")
    def healthz() -> Response:
        if state.sync_stalled():
            return _one_line(503, "certificate sync has stalled")
        return jsonify({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        view = state.view
        if isinstance(view, DisabledView):
            cluster = "disabled"
        else:
            synced = getattr(view, "synced", {})
            # Pod mutation needs PodGroups; Workloads only serve PG-2, which degrades to a warning.
            cluster = "synced" if synced.get("podgroups", True) else "syncing"
            if cluster == "synced" and not all(synced.values()):
                cluster = "synced (workloads still syncing)"
        body = {"config": "loaded", "certificates": "loaded" if state.certs_loaded() else "missing", "cluster": cluster}
        ready = body["certificates"] == "loaded" and cluster != "syncing"
        resp = jsonify({"ready": ready, **body})
        resp.status_code = 200 if ready else 503
        return resp

    @app.get("/metrics")
    def metrics_route() -> Response:
        data, ctype = metrics.render()
        return Response(data, content_type=ctype)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return _one_line(exc.code or 400, exc.description.splitlines()[0] if exc.description else exc.name)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("unexpected error")
        return _one_line(500, "internal error; see the webhook's log")

    return app
