"""`validate`'s output formats (docs/cli.md#output) on a real multi-document
input: each violation's file, line and column point at its field; the JUnit
XML is valid against the JUnit report schema (tests/unit/data/junit-report.xsd:
the format CI servers read, written for these tests), the SARIF against the
SARIF 2.1.0 JSON Schema (the standard's final schema, as the npm package
@microsoft/jest-sarif ships it: hack/fetch-sarif-schema.sh); GitHub's workflow commands are escaped as the
runner unescapes them; every JSON record has its apiVersion; --quiet keeps only
the violations; the summary states the exit code and what makes it."""
import json
import os
import re
import subprocess

import jsonschema
import pytest
import yaml
from lxml import etree

from tests.server.harness import REPO
from webhook.cli import main

DATA = os.path.join(REPO, "tests", "unit", "data")
MANIFESTS = """\
# Source: chart/templates/jobs.yaml
apiVersion: training.example.com/v1alpha1
kind: TrainJob
metadata: {name: all-with-basic, namespace: ml}
spec:
  replicas: 4
  scheduling:
    schedulingPolicy: {basic: {}}
    disruptionMode: {all: {}}
---
apiVersion: training.example.com/v1alpha1
kind: TrainJob
metadata:
  name: "größer"
  namespace: ml
spec:
  replicas: 8
  scheduling:
    schedulingPolicy:
      gang:
        minCount: 12
---
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: w, namespace: ml}
spec:
  podGroupTemplates:
    - name: workers
      schedulingPolicy: {gang: {minCount: 2}}
    - name: workers
      schedulingPolicy: {gang: {minCount: 2}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w, namespace: ml}
spec: {queueName: q}
---
apiVersion: training.example.com/v2
kind: TrainJob
metadata: {name: future, namespace: ml}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ml}
data: {a: b}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: fine, namespace: ml}
spec:
  schedulingPolicy: {gang: {minCount: 2}}
"""
CONFIG = """\
profiles: [jobset]
enforcement: {rules: {POL-3: warn}}
targets:
  - group: training.example.com
    kind: TrainJob
    versions: [v1alpha1]
    groups:
      - schedulingPolicy: spec.scheduling.schedulingPolicy
        disruptionMode: spec.scheduling.disruptionMode
        size: spec.replicas
"""
LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<kind>\S+) (?P<name>\S+): "
                  r"(?:Warning: |Audit: )?(?P<field>[^:]+): ")


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "manifests.yaml").write_text(MANIFESTS, encoding="utf-8")
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: [ConfigMap\n")
    (tmp_path / "config.yaml").write_text(CONFIG)
    return tmp_path


def run(capsys, inputs, *extra):
    code = main(["validate", "-f", str(inputs / "manifests.yaml"), str(inputs / "broken.yaml"),
                 "--config", str(inputs / "config.yaml"), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def last_key(field: str) -> str:
    return re.split(r"[.\[]", field.rstrip("]"))[-1]


def points_at(path, line: int, column: int, field: str) -> bool:
    """The text at line:column is the field's key (or the start of its list item)."""
    whole = open(path, encoding="utf-8").read().splitlines()[line - 1]
    text, key = whole[column - 1:], last_key(field)
    return text.startswith(key) if not key.isdigit() else whole[:column - 1].endswith("- ") or text[:1] in "-{["


def test_text_names_file_line_and_column_of_every_violation(capsys, inputs):
    code, out, err = run(capsys, inputs)
    assert code == 2          # a file not read: an input error, whatever else fails
    lines = [m for m in map(LINE.match, out.splitlines()) if m]
    assert {(m["kind"], m["name"]) for m in lines} == {("TrainJob", "ml/all-with-basic"), ("TrainJob", "ml/größer"),
                                                       ("Workload", "ml/w")}
    for m in lines:
        assert points_at(m["file"], int(m["line"]), int(m["col"]), m["field"]), m.group(0)
    assert f"{inputs / 'manifests.yaml'}:9:5: TrainJob ml/all-with-basic: spec.scheduling.disruptionMode" in out
    assert f"{inputs / 'manifests.yaml'}:21:9: TrainJob ml/größer: Warning: " \
           "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 12" in out
    assert f"{inputs / 'broken.yaml'}:3:1: error: not valid YAML: " in out
    assert "PodGroup ml/fine: valid" in out and "Workload ml/w: unrelated" in out
    assert err.splitlines()[:2] == [
        "4 object(s) checked, 2 invalid, 1 skipped (suspicious), 2 unrelated, 1 warned, 0 audited, 1 file(s) not read",
        "exit 2 because of 1 file(s) not read, 2 invalid"]


def test_the_summary_explains_an_exit_code_made_by_warnings(tmp_path, capsys, inputs):
    warned_only = tmp_path / "warned.yaml"
    warned_only.write_text(MANIFESTS.split("---\n")[1])
    args = ["validate", "-f", str(warned_only), "--config", str(inputs / "config.yaml")]
    assert main(args) == 0
    assert "exit 0: nothing fails at --fail-on deny" in capsys.readouterr().err
    assert main([*args, "--fail-on", "warn"]) == 1
    err = capsys.readouterr().err
    assert "0 invalid" in err and "1 warned" in err and "exit 1 because of 1 warned (--fail-on warn)" in err


def test_json_records_carry_api_version_status_and_positions(capsys, inputs):
    code, out, _ = run(capsys, inputs, "-o", "json")
    records = json.loads(out)
    assert code == 2 and all("apiVersion" in r for r in records)
    workloads = {r["apiVersion"]: r["status"] for r in records if r["kind"] == "Workload"}
    assert workloads == {"scheduling.k8s.io/v1beta1": "invalid", "kueue.x-k8s.io/v1beta1": "unrelated"}
    by_name = {(r["kind"], r["name"]): r for r in records}
    assert by_name[("TrainJob", "größer")]["status"] == "warned" and by_name[("TrainJob", "größer")]["line"] == 11
    assert by_name[("TrainJob", "future")]["skipped"].startswith("no rules for training.example.com/v2 TrainJob")
    error = by_name[("TrainJob", "all-with-basic")]["errors"][0]
    assert (error["rule"], error["line"], error["column"]) == ("DIS-2", 9, 5)
    [broken] = [r for r in records if r["status"] == "error"]
    assert broken["fails"] and (broken["line"], broken["errors"][0]["column"]) == (3, 1)


def test_junit_is_valid_against_the_junit_schema(capsys, inputs):
    schema = etree.XMLSchema(etree.parse(os.path.join(DATA, "junit-report.xsd")))
    code, out, _ = run(capsys, inputs, "-o", "junit")
    doc = etree.fromstring(out.encode())
    assert schema.validate(doc), schema.error_log
    assert (doc.get("tests"), doc.get("failures"), doc.get("errors")) == ("6", "2", "1")
    cases = {c.get("name"): c for c in doc.iter("testcase")}
    assert "Workload ml/w (kueue.x-k8s.io/v1beta1)" not in cases            # unrelated objects are not tests
    failure = cases["TrainJob ml/all-with-basic (training.example.com/v1alpha1)"].find("failure")
    assert failure.get("type") == "DIS-2" and f"{inputs / 'manifests.yaml'}:9:5: spec.scheduling.disruptionMode" in failure.text
    assert cases["TrainJob ml/future (training.example.com/v2)"].find("skipped") is not None
    assert "minCount" in cases["TrainJob ml/größer (training.example.com/v1alpha1)"].find("system-out").text
    code, out, _ = run(capsys, inputs, "-o", "junit", "--fail-on", "warn", "--fail-on-skipped")
    doc = etree.fromstring(out.encode())
    assert schema.validate(doc), schema.error_log
    assert doc.get("failures") == "4"


def test_sarif_is_valid_against_the_sarif_2_1_0_schema(capsys, inputs):
    path = subprocess.run([os.path.join(REPO, "hack", "fetch-sarif-schema.sh")], capture_output=True, text=True,
                          timeout=300, check=True).stdout.strip().splitlines()[-1]
    with open(path) as f:
        schema = json.load(f)
    code, out, _ = run(capsys, inputs, "-o", "sarif")
    log = json.loads(out)
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    [run_] = log["runs"]
    assert run_["invocations"][0]["exitCode"] == code == 2
    results = run_["results"]
    rules = [r["id"] for r in run_["tool"]["driver"]["rules"]]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)
    dis2 = next(r for r in results if r["ruleId"] == "DIS-2")
    assert dis2["level"] == "error" and dis2["locations"][0]["physicalLocation"]["region"] == {"startLine": 9,
                                                                                                "startColumn": 5}
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels["POL-3"] == "warning" and levels["skipped"] == "warning" and levels["file-not-read"] == "error"


def test_github_annotations_are_on_the_file_and_line(capsys, inputs):
    from webhook.validate.output import github
    code, out, err = run(capsys, inputs, "-o", "github")
    assert code == 2
    commands = out.splitlines()
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in commands), out
    path = github.escape_property(str(inputs / "manifests.yaml"))
    assert (f"::error file={path},line=9,col=5,title=DIS-2::TrainJob ml/all-with-basic: spec.scheduling."
            "disruptionMode: Invalid value: ") in out
    assert f"::warning file={path},line=21,col=9,title=POL-3::TrainJob ml/größer: " in out
    assert any(c.startswith("::error file=") and "title=file not read" in c and ",line=3,col=1," in c for c in commands)
    assert "exit 2 because of" in err
    out = run(capsys, inputs, "-o", "github", "--fail-on", "warn")[1]
    assert f"::error file={path},line=21,col=9,title=POL-3::" in out


def test_github_escapes_as_the_runner_unescapes():
    from webhook.validate.output import github
    assert github.escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert github.command("error", "line one\nline two", file="dir/a,b.yaml", line=3, col=None, title="DIS-2") \
        == "::error file=dir/a%2Cb.yaml,line=3,title=DIS-2::line one%0Aline two"


def test_quiet_prints_only_what_fails_or_is_found(capsys, inputs):
    code, out, err = run(capsys, inputs, "--quiet")
    assert code == 2 and err == ""
    assert ": valid" not in out and "unrelated" not in out and "skipped" not in out
    assert "spec.scheduling.disruptionMode" in out and "Warning: " in out and "not valid YAML" in out
    code, out, _ = run(capsys, inputs, "--quiet", "-o", "json")
    assert {r["status"] for r in json.loads(out)} == {"invalid", "warned", "error"}
    code, out, _ = run(capsys, inputs, "--quiet", "--fail-on-skipped")
    assert "TrainJob ml/future: skipped" in out


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_positions_in_a_yaml_list_and_in_json(tmp_path, capsys, newline):
    bad = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "a", "namespace": "ml"},
           "spec": {"schedulingPolicy": {"gang": {"minCount": 0}}}}
    good = {**bad, "metadata": {"name": "b"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}}
    listed = {"apiVersion": "v1", "kind": "List", "items": [good, bad]}
    (tmp_path / "list.yaml").write_bytes(yaml.safe_dump(listed).replace("\n", newline).encode())
    (tmp_path / "list.json").write_bytes(json.dumps(listed, indent="\t").replace("\n", newline).encode())
    (tmp_path / "one.json").write_text(json.dumps(bad))
    for name in ("list.yaml", "list.json", "one.json"):
        path = tmp_path / name
        assert main(["validate", "-f", str(path), "-o", "json"]) == 1
        [record] = [r for r in json.loads(capsys.readouterr().out) if r["errors"]]
        error = record["errors"][0]
        assert error["field"] == "spec.schedulingPolicy.gang.minCount"
        line = path.read_bytes().decode().splitlines()[error["line"] - 1]
        key = '"minCount"' if name.endswith(".json") else "minCount"
        assert line[error["column"] - 1:].startswith(key), (name, line, error)
        first = path.read_bytes().decode().splitlines()[record["line"] - 1].lstrip(" \t-")
        assert first.startswith(("{", "apiVersion", "metadata", "kind", "spec")), (name, first)
