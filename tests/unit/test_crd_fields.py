"""`validate --crd`: fields a CRD's schema does not declare (webhook/schemas/unknown_fields.py),
by the API server's pruning rules, on hand-written schemas and on the
operators' real CRDs (../shared/adopters). The real API server's strict
decoding agrees field for field: tests/e2e/test_crd_fields.py."""
from __future__ import annotations

import os

import pytest
import yaml

from webhook import cli
from webhook.schemas import unknown_fields as crd_fields

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADOPTERS = os.path.normpath(os.path.join(REPO, "..", "shared", "adopters"))
OBJ = {"type": "object"}


def unknown(obj, schema) -> list[str]:
    return [str(e.field) for e in crd_fields.crd_unknown_fields(obj, schema)]


def test_properties_then_additional_properties_else_unknown():
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "integer"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "maps": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": OBJ}}},
            "empty": OBJ,
            "list": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}}
    obj = {"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "n", "labelz": {}},
           "spec": {"a": 1, "b": 2, "labels": {"any": "v"}, "maps": {"k": {"x": {}, "y": 1}},
                    "empty": {"inside": 1}, "list": [{"name": "a"}, {"name": "b", "nmae": "c"}]},
           "status": {}}
    assert sorted(unknown(obj, schema)) == sorted([
        "metadata.labelz", "spec.b", "spec.maps.k.y", "spec.empty.inside", "spec.list[1].nmae", "status"])


def test_preserve_unknown_fields_keeps_the_undeclared_but_walks_the_declared():
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"known": {"type": "object", "properties": {"a": OBJ}}}}}}
    obj = {"spec": {"anything": {"deep": 1}, "known": {"a": {}, "b": 1}}}
    assert unknown(obj, schema) == ["spec.known.b"]


def test_an_embedded_resource_has_apiversion_kind_and_object_meta():
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"template": {
        "type": "object", "x-kubernetes-embedded-resource": True,
        "properties": {"spec": {"type": "object", "properties": {"x": OBJ}}}}}}}}
    obj = {"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {}, "nmae": "x"},
                                 "spec": {"x": {}, "y": 1}}}}
    assert sorted(unknown(obj, schema)) == ["spec.template.metadata.nmae", "spec.template.spec.y"]


def test_the_message_is_kubectls_and_the_count_is_bounded():
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"replicas": OBJ}}}}
    (error,) = crd_fields.crd_unknown_fields({"spec": {"replica": 1}}, schema)
    assert str(error) == 'spec.replica: Invalid value: unknown field "spec.replica" (known fields: replicas)'
    many = crd_fields.crd_unknown_fields({"spec": {f"f{i}": 1 for i in range(500)}}, schema)
    assert len(many) == crd_fields.MAX_ERRORS


def _crd(name: str) -> dict:
    path = os.path.join(ADOPTERS, name)
    if not os.path.isfile(path):
        pytest.fail(f"{path} is missing: the tests read ../shared/adopters (CI has it)")
    with open(path) as f:
        return yaml.safe_load(f)


@pytest.mark.parametrize("crd_file, obj, typos", [
    ("jobset-was-5e28553e.crd.yaml",
     {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
      "spec": {"replicatedJobs": [{"name": "a", "replicas": 1, "template": {"spec": {"parallelism": 2, "template": {
          "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}}}],
               "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}},
     {"spec.schedulng": {}, "spec.replicatedJobs[0].replica": 1}),
    ("lws-was-27c50700.crd.yaml",
     {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "l"},
      "spec": {"leaderWorkerTemplate": {"size": 4, "workerTemplate": {"spec": {
          "containers": [{"name": "c", "image": "busybox"}]}}}, "scheduling": {"disruptionMode": {"all": {}}}}},
     {"spec.leaderWorkerTemplate.sizee": 2}),
])
def test_the_operators_real_crds(crd_file, obj, typos):
    schemas = crd_fields.CrdSchemas()
    assert schemas.add_crd(_crd(crd_file)) is None
    schema = schemas.for_object(obj)
    assert schema is not None
    assert unknown(obj, schema) == []                   # the valid object: nothing unknown
    for dotted, value in typos.items():
        parent = obj
        *head, last = dotted.replace("[0]", ".0").split(".")
        for seg in head:
            parent = parent[int(seg)] if seg.isdigit() else parent[seg]
        parent[last] = value
    assert sorted(unknown(obj, schema)) == sorted(typos)


def test_validate_with_crd_reports_typos_beside_the_blocks(tmp_path, capsys):
    doc = tmp_path / "typo.yaml"
    doc.write_text("apiVersion: training.example.com/v1alpha1\nkind: TrainJob\nmetadata: {name: t, namespace: ml}\n"
                   "spec:\n  replicas: 4\n  scheduling:\n    disruptonMode: {all: {}}\n"
                   "    schedulingPolicy: {gang: {minCont: 2}}\n")
    args = ["validate", "-f", str(doc), "--config", os.path.join(REPO, "examples", "config.yaml")]
    assert cli.main(args) == 1
    without = capsys.readouterr().out
    assert "disruptonMode" not in without and without.count('unknown field "spec.scheduling.schedulingPolicy') == 1
    assert cli.main([*args, "--crd", os.path.join(REPO, "examples", "crds", "trainjob.yaml")]) == 1
    out = capsys.readouterr().out
    assert 'unknown field "spec.scheduling.disruptonMode"' in out
    assert out.count("minCont") == 2         # once, on its line (the path and the message), not twice


def test_a_crd_file_that_holds_no_crd_is_a_usage_error(tmp_path, capsys):
    doc = tmp_path / "x.yaml"
    doc.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert cli.main(["validate", "-f", str(doc), "--crd", str(doc)]) == 2
    assert "not an apiextensions.k8s.io CustomResourceDefinition" in capsys.readouterr().err
