"""Unknown fields in the core kinds (webhook/schemas/unknown_fields.py), named in `validate` as
kubectl's strict decoding names them; never in the server or the audit, which judge what
kube-apiserver decoded (it dropped or refused them already, and may know newer fields)."""
from __future__ import annotations

import copy

import pytest
import yaml

from webhook import engine
from webhook.config import from_dict
from webhook.schemas import unknown_fields as strict

CFG = from_dict({"featureGates": {"CompositePodGroup": True, "PodGroupPreemptionPolicy": True}})


def podgroup(**spec) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ml"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


def workload(**template) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "wl", "namespace": "ml"},
            "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}, **template}]}}


def judge(obj, scope="cli"):
    """As `validate` judges (the engine, then the unknown fields); the server and audit: the engine alone."""
    verdict = engine.validate(engine.Request.for_object(obj), CFG, scope=scope)
    return strict.added(verdict, obj) if scope == "cli" else verdict


def unknown(verdict) -> list[str]:
    return [str(e.field) for e in verdict.errors if e.detail.startswith("unknown field ")]


def test_a_misspelled_field_beside_the_blocks_is_named_as_kubectl_names_it():
    """The issue: `spec.schedulingPolicyy` got no "unknown field" (kubectl apply reports it)."""
    verdict = judge(podgroup(schedulingPolicyy={}))
    [error] = verdict.errors
    assert str(error.field) == "spec.schedulingPolicyy" and error.rule is None
    assert error.detail.startswith('unknown field "spec.schedulingPolicyy"')


def test_one_level_adds_them_the_validate_command_for_core_kinds_and_crds_alike(tmp_path, capsys):
    """The engine never names unknown fields, whatever the scope; `validate` does, through the
    one module, for a core kind and for a target whose CRD it read."""
    from webhook.cli import main
    obj = podgroup(schedulingPolicyy={})
    assert not unknown(engine.validate(engine.Request.for_object(obj), CFG, scope="cli"))
    assert strict.unknown_fields({"apiVersion": "v1", "kind": "ConfigMap"}) is None     # no schema knows it
    crds = strict.CrdSchemas()
    assert crds.add_crd({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                         "spec": {"group": "example.com", "names": {"kind": "Thing"},
                                  "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                                      "type": "object", "properties": {"spec": {"type": "object"}}}}}]}}) is None
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spce": {}}
    assert [str(e.field) for e in strict.unknown_fields(thing, crds)] == ["spce"]
    path = tmp_path / "pg.yaml"
    path.write_text(yaml.safe_dump(obj))
    assert main(["validate", "-f", str(path)]) == 1
    assert 'unknown field "spec.schedulingPolicyy"' in capsys.readouterr().out


@pytest.mark.parametrize("scope", ["admission", "audit"])
def test_the_server_and_the_audit_do_not_refuse_what_the_api_server_admitted(scope):
    verdict = judge(podgroup(schedulingPolicyy={}, someFieldOfANewerRelease="x"), scope=scope)
    assert verdict.allowed and not unknown(verdict)


def test_every_unknown_field_is_named_at_every_level():
    obj = podgroup(schedulingPolicyy={}, workloadRef={"workloadName": "w", "templateName": "t", "extra": 1})
    obj["metadata"]["labelz"] = {}
    obj["status"] = {"conditions": [{"type": "A", "status": "True", "bogus": 1}], "phase": "x"}
    obj["top"] = 1
    assert unknown(judge(obj)) == ["metadata.labelz", "spec.schedulingPolicyy", "spec.workloadRef.extra",
                                   "status.conditions[0].bogus", "status.phase", "top"]


def test_a_workload_template_and_a_workload_status_are_strict():
    assert unknown(judge(workload(minCount=2))) == ["spec.podGroupTemplates[0].minCount"]
    obj = workload()
    obj["status"] = {}
    assert unknown(judge(obj)) == ["status"]        # a Workload has no status


def test_a_composite_podgroup_is_strict():
    obj = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
           "metadata": {"name": "c", "namespace": "ml"}, "spec": {"schedulingPolicy": {"basic": {}}, "children": 2}}
    assert unknown(judge(obj)) == ["spec.children"]


def test_an_object_as_the_api_server_returns_it_has_no_unknown_field():
    obj = podgroup(disruptionMode={"single": {}}, preemptionPolicy="Never", priorityClassName="high", priority=5,
                   workloadRef={"workloadName": "w", "templateName": "t"})
    obj["metadata"].update({
        "uid": "0f1e", "resourceVersion": "7", "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z",
        "generateName": "pg-", "labels": {"a": "b"}, "annotations": {"c": "d"}, "finalizers": ["x/y"],
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "1", "controller": True,
                             "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "scheduling.k8s.io/v1beta1",
                           "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:spec": {"f:anything": {}}}}]})
    obj["status"] = {"conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "R", "message": "m",
                                     "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    assert strict.core_unknown_fields("podgroup", obj) == []
    assert judge(obj).allowed


def test_an_owner_reference_is_strict_too():
    obj = podgroup()
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "1", "ctrl": True}]
    assert unknown(judge(obj)) == ["metadata.ownerReferences[0].ctrl"]


def test_an_unknown_field_inside_a_block_is_named_once():
    obj = podgroup()
    obj["spec"]["schedulingPolicy"]["gang"]["minCont"] = 2
    assert unknown(judge(obj)) == ["spec.schedulingPolicy.gang.minCont"]


def test_the_published_schemas_stay_open():
    """The strict copy is built beside them: the server's shape check is unchanged."""
    from webhook.schemas import all_schemas
    published = copy.deepcopy(all_schemas()["podgroup"])
    strict.strict_schema("podgroup")
    assert all_schemas()["podgroup"] == published and "additionalProperties" not in published["properties"]["spec"]
