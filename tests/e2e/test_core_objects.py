"""Workload, PodGroup and CompositePodGroup through the real API server: the
webhook's own rules apply (its mirror rules' agreement with kube-apiserver is
tests/e2e/test_agreement.py)."""
import copy

from tests.unit.helpers import podgroup, template, workload


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
