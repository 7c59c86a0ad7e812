"""Kubernetes Events for denials (issue 30, `events.enabled`) in a real
kube-apiserver: the served webhook, connected as a ServiceAccount holding only
the rules a serving Pod has plus `create` on events.k8s.io events, writes one
Warning Event `Denied` in the object's namespace for each denial, regarding the
object (by uid on UPDATE), with the user and the rule ids; a dry run writes
none; past the bucket (events.perMinute, events.burst) denials are dropped and
counted, and without the RBAC rule every Event is a counted failure while
admission goes on. Its own CRD (a TrainJob copy) and registration name, so the
session webhook is untouched."""
from __future__ import annotations

import json
import time

import pytest
import yaml

from tests.e2e import adopters
from tests.e2e.rest import token_kubeconfig

GROUP, KIND, PLURAL = "events.example.com", "EventJob", "eventjobs"
NS, ACCOUNT, ROLE = "ww-events", "webhook", "ww-events-webhook"
TARGET = {"group": GROUP, "kind": KIND, "versions": ["v1"], "groups": [{"at": "spec.scheduling", "size": "spec.replicas"}]}
BAD = {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}          # DIS-2
GOOD = {"schedulingPolicy": {"gang": {"minCount": 2}}}
EVENTS_RULE = {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]}
# What a serving Pod may do besides (charts/workload-webhook/templates/rbac.yaml).
SERVING_RULES = [{"apiGroups": ["scheduling.k8s.io"], "resources": ["podgroups"], "verbs": ["get", "list", "watch"]},
                 {"apiGroups": ["scheduling.k8s.io"], "resources": ["workloads"], "verbs": ["get"]},
                 {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def eventjob(name: str, scheduling: dict, namespace: str = NS) -> dict:
    return {"apiVersion": f"{GROUP}/v1", "kind": KIND, "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 4, "scheduling": scheduling}}


def _role(kubectl, rules: list) -> None:
    kubectl.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": ROLE},
                   "rules": rules})


@pytest.fixture(scope="module")
def hook(cluster, kubectl, tmp_path_factory):
    kubectl("apply", "-f", "-", stdin=adopters.trainjob_crd_copy(GROUP, KIND, PLURAL))
    kubectl("create", "namespace", NS, check=False)
    kubectl("create", "serviceaccount", ACCOUNT, "-n", NS, check=False)
    _role(kubectl, [*SERVING_RULES, EVENTS_RULE])
    kubectl("create", "clusterrolebinding", ROLE, f"--clusterrole={ROLE}", f"--serviceaccount={NS}:{ACCOUNT}",
            check=False)
    deadline = time.monotonic() + 60
    while kubectl("get", PLURAL, "-A", check=False).returncode != 0:
        assert time.monotonic() < deadline, "the EventJob CRD was never served"
        time.sleep(0.3)
    tmp = tmp_path_factory.mktemp("events")
    sa = token_kubeconfig(cluster, kubectl, ACCOUNT, NS, tmp / "sa.kubeconfig")
    config = {"featureGates": adopters.ALL_GATES, "targets": [TARGET],
              "events": {"enabled": True, "perMinute": 1, "burst": 4}}

    def called() -> bool:
        proc = kubectl.create(eventjob("probe", BAD), "--dry-run=server", check=False)
        return proc.returncode != 0 and "(DIS-2)" in proc.stderr
    webhook = adopters.ProfileWebhook(kubectl, str(tmp), "ww-events", config,
                                      extra=["--cluster", "kubeconfig", "--kubeconfig", sa, "--workers", "1"])
    webhook.start(called)
    yield webhook
    webhook.stop()
    kubectl("delete", "clusterrolebinding,clusterrole", ROLE, "--ignore-not-found", check=False)


def _events(kubectl, name: str) -> list[dict]:
    out = kubectl("get", "events.events.k8s.io", "-n", NS, "-o", "json").stdout
    return [e for e in json.loads(out)["items"] if e["regarding"].get("name") == name]


def _wait_events(kubectl, name: str, count: int = 1, timeout: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _events(kubectl, name)
        if len(found) >= count:
            return found
        time.sleep(0.3)
    raise AssertionError(f"no Event for {name} in {NS} within {timeout:.0f} s")


def _metric(hook, name: str) -> float:
    _, _, body = hook.server.get("/metrics")
    line = next((x for x in body.decode().splitlines() if x.startswith(name + " ")), None)
    return float(line.rsplit(" ", 1)[1]) if line else 0.0


def _denied(kubectl, obj: dict, *extra: str) -> str:
    proc = kubectl.create(obj, *extra, check=False)
    assert proc.returncode != 0 and "(DIS-2)" in proc.stderr, proc.stderr
    return proc.stderr


def test_a_denied_create_writes_a_warning_event_in_its_namespace_and_a_dry_run_none(kubectl, hook):
    whoami = json.loads(kubectl("auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]["username"]
    _denied(kubectl, eventjob("dry", BAD), "--dry-run=server")
    _denied(kubectl, eventjob("bad-create", BAD))
    [event] = _wait_events(kubectl, "bad-create")
    assert (event["type"], event["reason"], event["action"], event["reportingController"]) == \
        ("Warning", "Denied", "Create", "workload-webhook")
    assert event["regarding"] == {"apiVersion": f"{GROUP}/v1", "kind": KIND, "name": "bad-create", "namespace": NS}
    assert event["note"].startswith(f"{whoami}: CREATE of {KIND} bad-create denied by the workload-webhook validate "
                                    "webhook (DIS-2): spec.scheduling.disruptionMode: Invalid value")
    assert event["metadata"]["annotations"]["workload-webhook.k8s.io/rules"] == "DIS-2"
    # The core/v1 view (kubectl get events, kubectl describe) shows it too.
    core = json.loads(kubectl("get", "events", "-n", NS, "--field-selector", "involvedObject.name=bad-create",
                              "-o", "json").stdout)["items"]
    assert [e["reason"] for e in core] == ["Denied"]
    assert _events(kubectl, "dry") == []


def test_a_denied_update_regards_the_stored_object_by_uid(kubectl, hook):
    kubectl.create(eventjob("bad-update", GOOD))
    stored = kubectl.get(PLURAL, "bad-update", NS)
    changed = {**stored, "spec": {**stored["spec"], "scheduling": {**GOOD, "disruptionMode": {"all": {}}}}}
    changed["spec"]["scheduling"]["schedulingPolicy"] = {"basic": {}}
    proc = kubectl("replace", "-f", "-", stdin=yaml.safe_dump(changed), check=False)
    assert proc.returncode != 0 and "(DIS-2)" in proc.stderr, proc.stderr
    [event] = _wait_events(kubectl, "bad-update")
    assert event["action"] == "Update" and event["regarding"]["uid"] == stored["metadata"]["uid"]


def test_without_the_rbac_rule_events_fail_counted_and_admission_is_unchanged(kubectl, hook):
    _role(kubectl, SERVING_RULES)              # create on events taken away
    failed = _metric(hook, 'workload_webhook_events_dropped_total{reason="failed"}')
    deadline = time.monotonic() + 90
    i = 0
    while _metric(hook, 'workload_webhook_events_dropped_total{reason="failed"}') <= failed:
        assert time.monotonic() < deadline, "no Event write was refused without the RBAC rule"
        _denied(kubectl, eventjob(f"norbac-{i}", BAD))      # still denied, with its usual answer
        i += 1
        time.sleep(1.0)                       # the bucket refills a token every 60 s: wait for one
    assert "event for EventJob" in hook.server.log() and "403" in hook.server.log()
    _role(kubectl, [*SERVING_RULES, EVENTS_RULE])


def test_denials_past_the_bucket_are_dropped_and_counted_and_admission_goes_on(kubectl, hook):
    """One worker, 4 tokens, 1 a minute: at most what the tests above left of the bucket."""
    written = _metric(hook, "workload_webhook_events_written_total")
    limited = _metric(hook, 'workload_webhook_events_dropped_total{reason="rate_limited"}')
    for i in range(8):
        _denied(kubectl, eventjob(f"burst-{i}", BAD))
    deadline = time.monotonic() + 20
    while _metric(hook, "workload_webhook_events_written_total") + _metric(
            hook, 'workload_webhook_events_dropped_total{reason="rate_limited"}') < written + limited + 8:
        assert time.monotonic() < deadline, "not every denial was written or counted as dropped"
        time.sleep(0.2)
    now_written = _metric(hook, "workload_webhook_events_written_total") - written
    assert now_written <= 3 and _metric(hook, 'workload_webhook_events_dropped_total{reason="rate_limited"}') - \
        limited >= 5
    assert sum(len(_events(kubectl, f"burst-{i}")) for i in range(8)) == now_written
