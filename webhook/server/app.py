"""What a worker serves: the Admission (webhook.server.admit, the admission
routes, a thin shell around webhook.engine) with Flask behind it for health,
readiness and metrics, and the 404/405 answers (ADM-1..7)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from webhook import kinds
from webhook.view import ClusterView
from webhook.config import Config
from webhook import metrics
from webhook.server.admit import Admission

log = logging.getLogger("workload_webhook.server")


@dataclass
class State:
    config: Config
    view: ClusterView
    certs_loaded: Callable[[], bool] = lambda: True
    sync_stalled: Callable[[], bool] = lambda: False    # certificate loop of the master stopped
    unregistrable: Callable[[], str | None] = lambda: None   # why serve --register may not register yet


def _one_line(status: int, reason: str) -> Response:
    resp = jsonify({"error": reason})
    resp.status_code = status
    return resp


def build_admission(state: State) -> Admission:
    app = Flask("workload_webhook")

    # POSTs never reach Flask (webhook.server.admit answers them); these routes
    # make any other method on the admission paths a 405, not a 404.
    @app.post("/validate", endpoint="validate")
    @app.post("/mutate", endpoint="mutate")
    def answered_before_flask() -> Response:
        return _one_line(500, "internal error; see the webhook's log")

    @app.get("/healthz")
    def healthz() -> Response:
        if state.sync_stalled():
            return _one_line(503, "certificate sync has stalled")
        return jsonify({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        view = state.view
        if view.disabled:
            cluster = "disabled"
        else:
            synced = view.synced
            # Pod mutation needs PodGroups; Workloads only serve PG-2, which degrades to a warning.
            cluster = "synced" if synced.get(kinds.PODGROUP.plural, True) else "syncing"
            if cluster == "synced" and not all(synced.values()):
                cluster = "synced (workloads still syncing)"
        body = {"config": "loaded", "certificates": "loaded" if state.certs_loaded() else "missing", "cluster": cluster}
        # serve --register: a target the cluster does not serve as registered (webhook.cluster.registrar).
        unregistrable = state.unregistrable()
        if unregistrable:
            body["targets"] = unregistrable
        ready = body["certificates"] == "loaded" and cluster != "syncing" and not unregistrable
        metrics.READY.set(1 if ready else 0)      # what the probe saw (the NoReadyReplicas alert)
        resp = jsonify({"ready": ready, **body})
        resp.status_code = 200 if ready else 503
        return resp

    if not state.config.server.metricsPort:       # else on a port of its own (server/metrics_listener.py)
        @app.get("/metrics")
        def metrics_route() -> Response:
            data, ctype = metrics.render()
            return Response(data, content_type=ctype)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        resp = _one_line(exc.code or 400, exc.description.splitlines()[0] if exc.description else exc.name)
        for name, value in exc.get_headers():
            if name.lower() == "allow":     # a 405 names the methods the target allows (RFC 9110 §15.5.6)
                resp.headers[name] = value
        return resp

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("unexpected error")
        return _one_line(500, "internal error; see the webhook's log")

    return Admission(state, app)
