"""The thinnest Flask admission app, served by the very gunicorn settings of
`workload-webhook serve` (same worker class, workers, TLS, keep-alive; every
request through Flask): the
in-run reference of bench/service_bench.py for what Flask itself costs.

    python bench/thin_app.py --port P --cert-dir DIR [--workers 2]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from flask import Flask, Response, request  # noqa: E402

from webhook import config  # noqa: E402
from webhook.certificates import files as certs  # noqa: E402
from webhook.certificates.serving import ServingCertificates  # noqa: E402
from webhook.server.gunicorn_app import Launch, WebhookServer  # noqa: E402


def thin_app() -> Flask:
    app = Flask("thin")

    @app.post("/validate")
    @app.post("/mutate")
    def admit() -> Response:
        review = json.loads(request.get_data())
        answer = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "response": {"uid": review["request"]["uid"], "allowed": True}}
        return Response(json.dumps(answer), content_type="application/json")

    @app.get("/healthz")
    def healthz() -> Response:
        return Response('{"status":"ok"}', content_type="application/json")

    return app


class FlaskOnly:
    """What the worker serves (webhook.server.admit.Admission's shape), with every
    request, admission POSTs included, going to the Flask app."""

    def __init__(self, app: Flask):
        self.fallback = app

    @staticmethod
    def route(method: bytes, path: str):
        return None


class ThinServer(WebhookServer):
    def load(self):
        return FlaskOnly(thin_app())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cert-dir", required=True)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    paths, _ = certs.ensure(args.cert_dir)
    cfg = config.Config()
    cfg = dataclasses.replace(cfg, server=dataclasses.replace(cfg.server, port=args.port, workers=args.workers,
                                                              certDir=args.cert_dir, cluster="disabled"))
    ThinServer(Launch(cfg, ServingCertificates(paths))).run()


if __name__ == "__main__":
    main()
