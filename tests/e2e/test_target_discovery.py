"""A target's resource against the real API server: a CRD whose plural is irregular
(kind TrainingPolicy, plural trainingpolicies) is registered by the name discovery
gives, and the API server then calls the webhook for it (a denial); a registration
naming what serves nothing (the old default, `trainingpolicys`) is never written; a
target whose CRD is not installed yet keeps `serve --register` not ready, with the
reason in /readyz, a log line and a metric, until the CRD comes; one deleted after
registration leaves the Pod ready (and says so)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from tests.e2e.test_registration import _wait
from tests.server.harness import Server
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations

OWNER = "ww-discovery-owner"
POLICY = {"group": "policy.example.com", "kind": "TrainingPolicy", "versions": ["v1"],
          "groups": [{"schedulingPolicy": "spec.scheduling.schedulingPolicy",
                      "disruptionMode": "spec.scheduling.disruptionMode"}]}
GANG = {**POLICY, "group": "gangs.example.com", "kind": "GangClass"}
HOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


def crd(target: dict, plural: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{target['group']}"},
            "spec": {"group": target["group"], "scope": "Namespaced",
                     "names": {"kind": target["kind"], "plural": plural, "singular": target["kind"].lower(),
                               "listKind": target["kind"] + "List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def bad(target: dict) -> dict:
    """An object that breaks DIS-2 (all with basic)."""
    return {"apiVersion": f"{target['group']}/v1", "kind": target["kind"],
            "metadata": {"name": "bad", "namespace": "default"},
            "spec": {"scheduling": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}}


def denied_by_the_webhook(kubectl, obj: dict):
    proc = kubectl.create(obj, "--dry-run=server", check=False)
    return proc.returncode != 0 and "(DIS-2)" in proc.stderr and proc


@pytest.fixture
def owner(kubectl):
    kubectl.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": OWNER}, "rules": []})
    yield OWNER
    kubectl("delete", "clusterrole", OWNER, "--ignore-not-found")


class Registering:
    """`serve --register` with its own config and manifests, under its own configuration name."""

    def __init__(self, cluster, kubectl, tmp_path, name: str, targets: list[dict], revision: str | None = "1"):
        self.cluster, self.kubectl, self.name = cluster, kubectl, name
        self.config = tmp_path / f"{name}.yaml"
        self.config.write_text(yaml.safe_dump({"targets": targets}))
        (tmp_path / name).mkdir()
        self.server = Server(str(tmp_path / name), config=str(self.config),
                             env={"WW_REGISTER_REVISION": revision} if revision else {},
                             extra=["--cluster", "kubeconfig", "--kubeconfig", cluster.kubeconfig("admin")])
        self.manifests = tmp_path / f"{name}-webhooks.yaml"

    def start(self, docs: list[dict]) -> "Registering":
        self.manifests.write_text(yaml.safe_dump_all([d for d in docs if d["kind"] in HOOK_KINDS]))
        self.server.args += ["--register", str(self.manifests), "--register-owner", OWNER]
        self.server.start()
        return self

    def endpoint(self) -> Endpoint:
        return Endpoint(b"", url=f"https://127.0.0.1:{self.server.port}")      # caBundle: the registrar's ca.crt

    def registered(self) -> dict | None:
        proc = self.kubectl("get", "validatingwebhookconfiguration", self.name, "-o", "json", check=False)
        return json.loads(proc.stdout) if proc.returncode == 0 else None

    def readyz(self) -> tuple[int, dict]:
        status, _, body = self.server.get("/readyz")
        return status, json.loads(body)

    def metric(self, target: str) -> str | None:
        _, _, body = self.server.get("/metrics")
        prefix = f'workload_webhook_targets_unserved{{target="{target}"}} '
        return next((line[len(prefix):] for line in body.decode().splitlines() if line.startswith(prefix)), None)

    def stop(self) -> None:
        self.server.stop()
        self.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", self.name,
                     "--ignore-not-found")


def test_an_irregular_plural_is_resolved_by_discovery_and_the_webhook_is_called(cluster, kubectl, owner, tmp_path):
    kubectl.apply(crd(POLICY, "trainingpolicies"))
    kubectl("wait", "--for=condition=Established", "crd/trainingpolicies.policy.example.com", "--timeout=60s")
    hook = Registering(cluster, kubectl, tmp_path, "ww-irregular", [POLICY])
    try:
        # The serving certificates first (serve uses the files it finds), so their CA is the bundle.
        subprocess.run([sys.executable, "-m", "webhook", "certs", "generate", "--out", hook.server.cert_dir],
                       check=True, capture_output=True, timeout=60)
        cli = [sys.executable, "-m", "webhook", "webhook-configs", "--config", str(hook.config), "--name", hook.name,
               "--ca-bundle", os.path.join(hook.server.cert_dir, "ca.crt"),
               "--url", f"https://127.0.0.1:{hook.server.port}"]
        offline = subprocess.run(cli, capture_output=True, text=True, timeout=60)
        assert offline.returncode == 2 and "TrainingPolicy.policy.example.com: give `plural`" in offline.stderr
        found = subprocess.run([*cli, "--kubeconfig", cluster.kubeconfig("admin")], capture_output=True, text=True,
                               timeout=60)
        assert found.returncode == 0, found.stderr
        docs = list(yaml.safe_load_all(found.stdout))
        rules = [r for d in docs if d["kind"] in HOOK_KINDS for h in d["webhooks"]
                 if h["name"].startswith("targets.") for r in h["rules"]]
        assert rules and all(r["resources"] == ["trainingpolicies"] for r in rules)

        hook.start(docs)
        _wait(hook.registered, 30, "the configurations were not registered", hook.server.log)
        assert hook.readyz()[0] == 200
        denied = _wait(lambda: denied_by_the_webhook(kubectl, bad(POLICY)), 30,
                       "the API server never called the webhook", hook.server.log)
        assert "spec.scheduling.disruptionMode" in denied.stderr
    finally:
        hook.stop()
        kubectl("delete", "crd", "trainingpolicies.policy.example.com", "--ignore-not-found")


def test_a_rule_that_names_what_serves_nothing_is_never_registered(cluster, kubectl, owner, tmp_path):
    """The registration the old default ("lowercase kind + s") gave: trainingpolicys. The API
    server would never call the webhook for it, and nothing would say so."""
    kubectl.apply(crd(POLICY, "trainingpolicies"))
    kubectl("wait", "--for=condition=Established", "crd/trainingpolicies.policy.example.com", "--timeout=60s")
    hook = Registering(cluster, kubectl, tmp_path, "ww-misnamed", [POLICY], revision=None)   # revision 0
    try:
        old_default = config_mod.from_dict({"targets": [{**POLICY, "plural": "trainingpolicys"}]})
        hook.start(configurations(old_default, hook.endpoint(), name=hook.name))
        reason = "targets not served: policy.example.com/trainingpolicys: a rule of targets.validate"
        status, body = _wait(lambda: (lambda r: r[1].get("targets", "").startswith("targets not served") and r)(hook.readyz()), 30,
                             "/readyz never gave the targets' reason", hook.server.log)
        assert status == 503 and body["ready"] is False and body["targets"].startswith(reason), body
        assert "policy.example.com serves them as trainingpolicies" in body["targets"]
        _wait(lambda: "webhook registration: waiting: " + reason in hook.server.log(), 30, "no log line",
              hook.server.log)
        assert '"level":"warning"' in next(line for line in hook.server.log().splitlines() if reason in line)
        assert hook.metric("policy.example.com/trainingpolicys") == "1.0"
        time.sleep(6)                          # a discovery round later: still nothing written
        assert hook.registered() is None
        assert kubectl("get", "mutatingwebhookconfiguration", hook.name, check=False).returncode != 0
    finally:
        hook.stop()
        kubectl("delete", "crd", "trainingpolicies.policy.example.com", "--ignore-not-found")


def test_a_kind_not_served_yet_keeps_it_not_ready_until_its_crd_comes(cluster, kubectl, owner, tmp_path):
    kubectl("delete", "crd", "gangclasses.gangs.example.com", "--ignore-not-found")
    hook = Registering(cluster, kubectl, tmp_path, "ww-later", [GANG])
    target = "GangClass.gangs.example.com"
    try:
        cfg = config_mod.load(hook.config)
        hook.start(configurations(cfg, hook.endpoint(), name=hook.name, resources={target: "gangclasses"}))
        status, body = _wait(lambda: (lambda r: r[1].get("targets", "").startswith("targets not served") and r)(hook.readyz()), 30,
                             "/readyz never gave the targets' reason", hook.server.log)
        assert status == 503 and body["targets"] == (
            f"targets not served: {target}: not served: gangs.example.com/{{v1}} is not served "
            "(is its CRD installed?)"), body
        assert f"webhook registration: waiting: targets not served: {target}" in hook.server.log()
        assert hook.metric(target) == "1.0"
        assert hook.registered() is None

        kubectl.apply(crd(GANG, "gangclasses"))          # the CRD comes later
        _wait(hook.registered, 60, "not registered once the CRD was served", hook.server.log)
        assert _wait(lambda: hook.readyz()[0] == 200, 30, "not ready once registered", hook.server.log)
        assert "targets" not in hook.readyz()[1] and hook.metric(target) == "0.0"
        _wait(lambda: denied_by_the_webhook(kubectl, bad(GANG)), 30, "the API server never called the webhook",
              hook.server.log)

        # The CRD goes after registration: this revision stays registered and the Pod stays ready
        # (refusing to serve would refuse every object the webhooks guard); the log and metric say it.
        kubectl("delete", "crd", "gangclasses.gangs.example.com")
        _wait(lambda: f"webhook registration: not updating: targets not served: {target}" in hook.server.log(), 45,
              "the registrar never noticed the CRD was gone", hook.server.log)
        assert hook.readyz()[0] == 200 and hook.registered() is not None and hook.metric(target) == "1.0"
    finally:
        hook.stop()
        kubectl("delete", "crd", "gangclasses.gangs.example.com", "--ignore-not-found")


def test_audit_lists_a_target_by_the_resource_discovery_names(cluster, kubectl, tmp_path):
    """A CRD's plural is whatever its author chose: `tpolicies` for TrainingPolicy is no English
    plural and no guess finds it. The audit asks discovery, lists it and reports the object."""
    target = {**POLICY, "group": "audit-plural.example.com"}
    kubectl.apply(crd(target, "tpolicies"))
    kubectl("wait", "--for=condition=Established", "crd/tpolicies.audit-plural.example.com", "--timeout=60s")
    try:
        kubectl.create(bad(target))                     # no webhook judges this group: stored as it is
        config = tmp_path / "audit.yaml"
        config.write_text(yaml.safe_dump({"targets": [target]}))
        proc = subprocess.run([sys.executable, "-m", "webhook", "audit", "--config", str(config), "--kubeconfig",
                               cluster.kubeconfig("admin"), "-o", "json"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr        # the stored object's DIS-2 violation
        found = json.loads(proc.stdout)
        assert [(v["kind"], v["name"]) for v in found["violations"] if v["kind"] == "TrainingPolicy"] == \
            [("TrainingPolicy", "bad")], found
        assert not [s for s in found["skipped"] if "TrainingPolicy" in s], found["skipped"]
    finally:
        kubectl("delete", "crd", "tpolicies.audit-plural.example.com", "--ignore-not-found")
