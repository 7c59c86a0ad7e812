"""Workload, PodGroup and CompositePodGroup through the real API server: the
webhook's extra rules apply, and its mirror rules agree with kube-apiserver's
own validation on a shared table of cases (the upstream cases of
tests/unit/data/upstream_cases.yaml that a 1.37 server with every gate on can judge)."""
import copy
import http.client
import json

import pytest

from webhook import engine
from webhook.config import from_dict
from tests.unit import test_upstream_cases as upstream
from tests.unit.helpers import podgroup, template, workload

PLURALS = {"Workload": "workloads", "PodGroup": "podgroups", "CompositePodGroup": "compositepodgroups"}
UNJUDGED_NS = "workload-webhook"   # the webhook's own namespace: never intercepted


def ns_obj(obj, namespace):
    obj = copy.deepcopy(obj)
    obj["metadata"] = {**obj["metadata"], "namespace": namespace}
    return obj


def test_DIS_2_workload_template_all_with_basic(webhook, kubectl, namespace):
    bad = ns_obj(workload([template("w", policy={"basic": {}}, disruptionMode={"all": {}})]), namespace)
    proc = kubectl.apply(bad, check=False)
    assert proc.returncode != 0
    assert 'The Workload "wl" is invalid' in proc.stderr
    assert "spec.podGroupTemplates[0].disruptionMode: Invalid value" in proc.stderr
    good = ns_obj(workload([template("w", disruptionMode={"all": {}})], version="v1alpha3"), namespace)
    kubectl.apply(good)


def test_PG_2_podgroup_must_match_its_template(webhook, kubectl, namespace):
    kubectl.apply(ns_obj(workload([template("workers", policy={"gang": {"minCount": 4}}, disruptionMode={"all": {}})]),
                         namespace))
    ref = {"workloadName": "wl", "templateName": "workers"}
    ok = ns_obj(podgroup("pg-ok", workloadRef=ref, schedulingPolicy={"gang": {"minCount": 8}},
                         disruptionMode={"all": {}}), namespace)
    kubectl.apply(ok)
    bad = ns_obj(podgroup("pg-bad", workloadRef=ref, disruptionMode={"single": {}}), namespace)
    proc = kubectl.apply(bad, check=False)
    assert proc.returncode != 0 and "spec.disruptionMode" in proc.stderr and "workers" in proc.stderr
    missing = ns_obj(podgroup("pg-orphan", workloadRef={"workloadName": "nope", "templateName": "x"}), namespace)
    proc = kubectl.apply(missing)
    assert "Warning:" in proc.stderr and "not found" in proc.stderr


def test_v1alpha3_composite_podgroup_through_the_webhook(webhook, kubectl, namespace):
    cpg = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
           "metadata": {"name": "cpg", "namespace": namespace},
           "spec": {"workloadRef": {"workloadName": "wl", "templateName": "pipeline"},
                    "schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}
    proc = kubectl.apply(cpg, check=False)
    assert proc.returncode != 0 and "spec.disruptionMode" in proc.stderr


# ---- agreement with kube-apiserver's own validation
MIRROR = from_dict({"featureGates": {g: True for g in upstream.ALL_GATES},
                    "policies": {"forbidAllWithBasic": False, "checkPodGroupAgainstWorkload": False}})


def _comparable(case: dict) -> bool:
    """A CREATE the 1.37 test server (every gate on) judges by validation alone:
    - the case's own gates do not change the engine's verdict on this object, and
    - no priority fields on a PodGroup/CompositePodGroup: the Priority admission
      plugin resolves them (and refuses what it cannot) before validation runs."""
    if case["kind"] not in PLURALS or case["operation"] != "CREATE" or case.get("subresource") \
            or case.get("scope") == "handwritten":
        return False
    spec = case["object"].get("spec") or {}
    if case["kind"] != "Workload" and any(k in spec for k in ("priority", "priorityClassName", "preemptionPolicy")):
        return False
    req = engine.Request.for_object(case["object"])
    as_tested = engine.validate(req, upstream._config(case))
    return {(e.type, str(e.field)) for e in as_tested.errors} == \
        {(e.type, str(e.field)) for e in engine.validate(req, MIRROR).errors}


def _in_both_versions(case: dict) -> list[dict]:
    """Workload and PodGroup are served as v1beta1 and v1alpha3: judge each case in both."""
    if case["kind"] == "CompositePodGroup":
        return [case]
    out = []
    for version in ("v1beta1", "v1alpha3"):
        c = copy.deepcopy(case)
        c["object"]["apiVersion"] = f"scheduling.k8s.io/{version}"
        c["id"] = f"{version} {case['id']}"
        out.append(c)
    return out


CASES = [v for c in upstream.CASES if _comparable(c) for v in _in_both_versions(c)]


@pytest.fixture(scope="module")
def api(cluster, kubectl):
    kubectl("create", "namespace", UNJUDGED_NS, check=False)

    def judge(obj: dict) -> tuple[bool, set]:
        group_version = obj["apiVersion"]
        path = f"/apis/{group_version}/namespaces/{UNJUDGED_NS}/{PLURALS[obj['kind']]}?dryRun=All"
        conn = http.client.HTTPSConnection("127.0.0.1", cluster.port, context=cluster.ssl_context("admin"), timeout=30)
        try:
            conn.request("POST", path, json.dumps(obj), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            body = json.loads(resp.read())
        finally:
            conn.close()
        if resp.status in (200, 201):
            return True, set()
        assert resp.status == 422, body
        causes = body.get("details", {}).get("causes", [])
        return False, {(c["reason"].removeprefix("FieldValue"), c.get("field", "")) for c in causes}
    return judge


def test_shared_table_is_large():
    assert len(CASES) >= 200


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_verdicts_agree_with_kube_apiserver(api, case):
    obj = ns_obj(case["object"], UNJUDGED_NS)
    server_allowed, server_errors = api(obj)
    ours = engine.validate(engine.Request.for_object(obj), MIRROR)
    ours_errors = upstream._ours(case, ours)
    ours_allowed = not ours_errors
    types = {"Required": "Required", "Invalid": "Invalid", "Forbidden": "Forbidden", "NotSupported": "NotSupported",
             "TooMany": "TooMany", "Duplicate": "Duplicate"}
    server_errors = {(types.get(t, t), f) for t, f in server_errors}
    # The API server defaults disruptionMode before validating; the engine accepts its absence (PG-1).
    server_errors.discard(("Required", "spec.disruptionMode"))
    server_allowed = server_allowed or not server_errors
    assert ours_allowed == server_allowed, f"server: {sorted(server_errors)}; ours: {sorted(ours_errors)}"
    if not server_allowed:
        assert ours_errors == server_errors
