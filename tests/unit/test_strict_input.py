"""The offline verdict is as strict as kubectl: unknown fields inside the
building blocks, duplicate keys and YAML syntax errors (with line and column)
are errors; objects no rule covers are counted and can fail the run; an empty
input is an error."""
import json

import jsonschema

from webhook.cli import main
from webhook.config import load
from webhook.target_schema import for_target

CFG = ["--config", "examples/config.yaml"]
TYPO = """apiVersion: training.example.com/v1alpha1
kind: TrainJob
metadata: {name: t, namespace: ml}
spec:
  replicas: 4
  scheduling:
    schedulingPolicy: {gang: {minCont: 4}}
    disruptionMode: {all: {}, sngle: {}}
"""


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_unknown_fields_inside_blocks_are_errors_naming_the_path(tmp_path, capsys):
    path = tmp_path / "typo.yaml"
    path.write_text(TYPO)
    code, out, _ = run(capsys, "validate", "-f", str(path), *CFG)
    assert code == 1
    assert 'unknown field "spec.scheduling.schedulingPolicy.gang.minCont" (known fields: minCount)' in out
    assert 'unknown field "spec.scheduling.disruptionMode.sngle"' in out


def test_the_target_schema_refuses_the_same_typo():
    import yaml
    cfg = load("examples/config.yaml")
    target = next(t for t in cfg.targets if t.kind == "TrainJob")
    schema = for_target(target)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(TYPO)))
    assert any("minCont" in e.message for e in errors), [e.message for e in errors]


def test_a_key_given_twice_is_an_error_with_its_line(tmp_path, capsys):
    path = tmp_path / "dup.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n")
    code, out, _ = run(capsys, "validate", "-f", str(path))
    assert code == 2 and f"{path}:5:3: error: not valid YAML: duplicate key 'name' (first at line 4)" in out
    js = tmp_path / "dup.json"
    js.write_text('{"apiVersion": "v1", "kind": "Pod", "kind": "Pod"}')
    code, out, _ = run(capsys, "validate", "-f", str(js))
    assert code == 2 and "duplicate key 'kind'" in out


def test_yaml_merge_keys_are_not_duplicates(tmp_path, capsys):
    path = tmp_path / "merge.yaml"
    path.write_text("x-base: &b {name: a}\napiVersion: v1\nkind: Pod\nmetadata:\n  <<: *b\n  namespace: ml\n")
    code, out, _ = run(capsys, "validate", "-f", str(path))
    assert code == 0 and "duplicate" not in out


def test_syntax_errors_keep_line_and_column(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: v1\nkind: [Pod\nmetadata: {}\n")
    code, out, _ = run(capsys, "validate", "-f", str(path))
    assert code == 2 and f"{path}:3:" in out and "error: not valid YAML: " in out
    js = tmp_path / "bad.json"
    js.write_text('{"a": 1,\n "b": }')
    code, out, _ = run(capsys, "validate", "-f", str(js))
    assert code == 2 and f"{js}:2:7: error: not valid JSON: " in out


def test_objects_without_rules_are_counted_and_can_fail_the_run(tmp_path, capsys):
    path = tmp_path / "v2.yaml"
    path.write_text("apiVersion: training.example.com/v2\nkind: TrainJob\nmetadata: {name: x}\n---\nkind: Pod\n")
    code, out, err = run(capsys, "validate", "-f", str(path), *CFG)
    assert code == 0
    assert "skipped (no rules for training.example.com/v2 TrainJob (the rules cover v1alpha1))" in out
    assert "skipped (no apiVersion/kind)" in out
    assert "0 object(s) checked, 0 invalid, 2 skipped" in err
    code, _, _ = run(capsys, "validate", "-f", str(path), "--fail-on-skipped", *CFG)
    assert code == 1
    code, out, _ = run(capsys, "validate", "-f", str(path), "-o", "json", *CFG)
    assert [e["skipped"] is not None for e in json.loads(out)] == [True, True]


def test_an_empty_input_is_an_error(tmp_path, capsys):
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing\n")
    code, _, err = run(capsys, "validate", "-f", str(path))
    assert code == 2 and "no objects in" in err
