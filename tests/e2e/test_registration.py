"""serve --register against the real API server: the service registers its own
webhook configurations once it is ready (owned by a ClusterRole, carrying its
revision and its CA, written as the field manager workload-webhook-registrar), the
API server then calls it; an older revision never overwrites a newer registration; a service that never becomes ready never
registers (admission stays as it was). The Service-endpoint wait and the
garbage collection at uninstall run on the real node (test_chart_node.py)."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time

import yaml

from tests.e2e.conftest import E2E_CONFIG
from tests.server.harness import Server
from webhook import config as config_mod
from webhook.cluster.api import REGISTRAR
from webhook.cluster.registrar import ANNOTATION_REVISION
from webhook.registration import Endpoint, configurations

NAME = "ww-selfreg"
OWNER = "ww-selfreg-owner"
BAD = {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob",
       "metadata": {"name": "selfreg-bad", "namespace": "default"},
       "spec": {"replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}}


def _manifests(tmp_path, port: int) -> str:
    docs = configurations(config_mod.load(E2E_CONFIG), Endpoint(b"", url=f"https://127.0.0.1:{port}"), name=NAME)
    path = tmp_path / f"webhooks-{port}.yaml"
    path.write_text(yaml.safe_dump_all(docs[:2]))
    return str(path)


def _server(tmp_path, cluster, sub: str, user: str, revision: str) -> Server:
    workdir = tmp_path / sub
    workdir.mkdir()
    server = Server(str(workdir), config=E2E_CONFIG, env={"WW_REGISTER_REVISION": revision})
    server.args += ["--cluster", "kubeconfig", "--kubeconfig", cluster.kubeconfig(user),
                    "--register", _manifests(tmp_path, server.port), "--register-owner", OWNER]
    return server.start()


def _registered(kubectl, kind: str) -> dict | None:
    proc = kubectl("get", kind, NAME, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def _wait(predicate, seconds: float, what: str, log=lambda: ""):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what} within {seconds} s\n{log()}")


def test_serve_registers_itself_once_ready_and_never_over_a_newer_revision(cluster, kubectl, crds, webhook, tmp_path):
    kubectl.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": OWNER},
                   "rules": []})
    owner_uid = kubectl.get("clusterrole", OWNER, "")["metadata"]["uid"]
    servers = []
    try:
        first = _server(tmp_path, cluster, "rev2", "admin", "2")
        servers.append(first)
        for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
            obj = _wait(lambda: _registered(kubectl, kind), 30, f"no {kind} registered", first.log)
            assert obj["metadata"]["annotations"][ANNOTATION_REVISION] == "2"
            # written as the registrar (the layer names its fieldManager), not as `OpenAPI-Generator`
            managed = json.loads(kubectl("get", kind, NAME, "-o", "json", "--show-managed-fields").stdout)
            assert {m["manager"] for m in managed["metadata"]["managedFields"]} == {REGISTRAR}, managed["metadata"]
            assert [(r["kind"], r["name"], r["uid"]) for r in obj["metadata"]["ownerReferences"]] == \
                [("ClusterRole", OWNER, owner_uid)]
            with open(os.path.join(first.cert_dir, "ca.crt"), "rb") as f:
                ca = base64.b64encode(f.read()).decode()
            assert {h["clientConfig"]["caBundle"] for h in obj["webhooks"]} == {ca}
        # The API server calls it (the session's own registration stepped aside).
        kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "workload-webhook",
                "--ignore-not-found")
        denied = _wait(lambda: (lambda p: p.returncode != 0 and "(DIS-2)" in p.stderr and p)(
            kubectl.create(BAD, "--dry-run=server", check=False)), 30, "the registered webhook never denied")
        assert "spec.scheduling.disruptionMode" in denied.stderr

        # `check` (the chart's helm test) agrees: registered, and a DIS-2 probe is denied.
        ok = subprocess.run([sys.executable, "-m", "webhook", "check", "--name", NAME, "--namespace", "default",
                             "--kubeconfig", cluster.kubeconfig("admin"), "--timeout", "30"],
                            capture_output=True, text=True, timeout=60)
        assert ok.returncode == 0 and ok.stdout.startswith("ok:"), ok.stdout + ok.stderr
        missing = subprocess.run([sys.executable, "-m", "webhook", "check", "--name", "ww-not-installed",
                                  "--kubeconfig", cluster.kubeconfig("admin"), "--timeout", "2"],
                                 capture_output=True, text=True, timeout=60)
        assert missing.returncode == 1 and "ww-not-installed: not registered" in missing.stderr

        # A Pod of an older revision (a rollout's terminating Pod) leaves it alone.
        older = _server(tmp_path, cluster, "rev1", "admin", "1")
        servers.append(older)
        _wait(lambda: "webhook registration: up to date" in older.log(), 30, "the older server never checked",
              older.log)
        vwc = _registered(kubectl, "validatingwebhookconfiguration")
        assert vwc["metadata"]["annotations"][ANNOTATION_REVISION] == "2"
        assert str(first.port) in vwc["webhooks"][0]["clientConfig"]["url"]
    finally:
        for s in servers:
            s.stop()
        kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", NAME, "--ignore-not-found")
        kubectl("delete", "clusterrole", OWNER, "--ignore-not-found")
        webhook.register()          # the session's registration, for the tests after this one


def test_a_service_that_never_becomes_ready_registers_nothing(cluster, kubectl, tmp_path):
    kubectl.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": OWNER},
                   "rules": []})
    server = None
    try:
        # alice may not list PodGroups: the cache never syncs, /readyz stays 503.
        server = _server(tmp_path, cluster, "never-ready", "alice", "9")
        time.sleep(8)
        status, _, body = server.get("/readyz")
        assert status == 503, body
        assert _registered(kubectl, "validatingwebhookconfiguration") is None
        assert _registered(kubectl, "mutatingwebhookconfiguration") is None
        assert "waiting: this Pod is not ready" in server.log()
    finally:
        if server:
            server.stop()
        kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", NAME, "--ignore-not-found")
        kubectl("delete", "clusterrole", OWNER, "--ignore-not-found")
