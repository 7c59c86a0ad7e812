"""Talking to the test API server directly: JSON over HTTPS with the admin
certificate, and a kubeconfig holding a ServiceAccount's token (to act as it)."""
from __future__ import annotations

import base64
import http.client
import json
from urllib.parse import urlparse

import yaml


class Api:
    """JSON over HTTPS to the API server with the admin certificate."""

    def __init__(self, cluster):
        url = urlparse(cluster.url)
        self.host, self.port, self.ctx = url.hostname, url.port, cluster.ssl_context("admin")

    def call(self, method: str, path: str, body=None, content_type: str = "application/json") -> tuple[int, dict]:
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=30)
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers={"Content-Type": content_type})
            resp = conn.getresponse()
            data = resp.read()
            try:
                return resp.status, (json.loads(data) if data else {})
            except ValueError:       # e.g. a plain-text 404 from a resource that is not served
                return resp.status, {"message": data.decode(errors="replace")}
        finally:
            conn.close()

    def must(self, method: str, path: str, body=None, content_type: str = "application/json") -> dict:
        status, out = self.call(method, path, body, content_type)
        if status >= 300:
            raise AssertionError(f"{method} {path}: {status} {out.get('message', out)}")
        return out


def token_kubeconfig(cluster, kubectl, account: str, namespace: str, path) -> str:
    """A kubeconfig that authenticates as ServiceAccount `namespace/account` (a fresh token)."""
    token = kubectl("create", "token", account, "-n", namespace, "--duration=2h").stdout.strip()
    with open(cluster.ca_path, "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "sa",
           "clusters": [{"name": "c", "cluster": {"server": cluster.url, "certificate-authority-data": ca}}],
           "users": [{"name": "sa", "user": {"token": token}}],
           "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}]}
    with open(path, "w") as f:
        yaml.safe_dump(doc, f)
    return str(path)
