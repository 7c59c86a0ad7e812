"""The composite action (action.yml, docs/ci.md) run here step by step (tests/unit/action_runner.py)
on the repository's examples: the SARIF it writes is valid against the SARIF 2.1.0 schema
(hack/fetch-sarif-schema.sh, as test_cli_output.py) and holds exactly the violations the
CLI finds, the annotations reach the log, and the step's status follows fail-on.

The install is skipped (`install: 'false'`): the CLI is already installed here, and this
tree's code is what runs (PYTHONPATH), so what is tested is the action's judging and
reporting, not a copy of the package. The install step needs PyPI for the dependencies
(no wheel of them, nor of setuptools' `wheel`, is on this machine), so a no-network install
of it would test a different command than the one the action runs; it is run as written,
with network, by tests/install/test_ci_action_install.py. What runs of the install step
here is its guard: the Python floor it checks is pyproject's requires-python."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib

import jsonschema
import pytest
import yaml

from tests.server.harness import REPO
from tests.unit import action_runner

ACTION = os.path.join(REPO, "action.yml")


@pytest.fixture(scope="module")
def sarif_schema() -> dict:
    path = subprocess.run([os.path.join(REPO, "hack", "fetch-sarif-schema.sh")], capture_output=True, text=True,
                          timeout=300, check=True).stdout.strip().splitlines()[-1]
    with open(path) as f:
        return json.load(f)


@pytest.fixture
def workspace(tmp_path):
    """A checkout with the examples, as a workflow's job has after actions/checkout."""
    ws = tmp_path / "workspace"
    shutil.copytree(os.path.join(REPO, "examples"), ws / "examples")
    (tmp_path / "runner-temp").mkdir()
    return ws


def act(workspace, **with_) -> action_runner.Run:
    # The installed entry point beside this interpreter (not a version manager's shim), running this tree.
    bindir = os.path.dirname(sys.executable)
    assert os.access(os.path.join(bindir, "workload-webhook"), os.X_OK), f"workload-webhook is not installed in {bindir}"
    env = {"PATH": os.pathsep.join([bindir, "/usr/bin", "/bin"]),
           "PYTHONPATH": REPO, "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    return action_runner.run(REPO, str(workspace), {"install": "false", **with_}, env,
                             str(workspace.parent / "runner-temp"))


def cli_json(workspace, *args) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "webhook", "validate", *args, "-o", "json"], cwd=workspace,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": REPO})
    return json.loads(proc.stdout)


def findings(sarif: dict) -> set[tuple[str, int, str, str]]:
    [run] = sarif["runs"]
    return {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"], r["level"])
            for r in run["results"]}


def test_the_sarif_is_valid_and_holds_every_violation_of_the_invalid_examples(workspace, sarif_schema):
    result = act(workspace, files="examples/valid\nexamples/invalid\n", config="examples/config.yaml")
    assert result.ran == ["validate"] and result.status == 1, result.log      # install skipped; deny fails
    assert result.outputs["exit-code"] == "1" and result.outputs["sarif-file"] == "workload-webhook.sarif"
    with open(workspace / "workload-webhook.sarif", encoding="utf-8") as f:
        sarif = json.load(f)
    jsonschema.validators.validator_for(sarif_schema)(sarif_schema).validate(sarif)
    assert sarif["runs"][0]["invocations"][0]["exitCode"] == 1
    # Exactly what the CLI finds, each at its file and line: the invalid examples, every one of them.
    expected = {(r["file"], e["line"], e.get("rule") or f"FieldValue{e['type']}", "error")
                for r in cli_json(workspace, "-f", "examples/valid", "examples/invalid", "--config",
                                  "examples/config.yaml") for e in r["errors"]}
    assert findings(sarif) == expected
    assert {f[0] for f in expected} == {f"examples/invalid/{n}" for n in os.listdir(workspace / "examples/invalid")}
    assert ("examples/invalid/trainjob-all-with-basic.yaml", 10, "DIS-2", "error") in expected
    # The annotations of format github, on the file and line, in the log.
    assert ("::error file=examples/invalid/trainjob-all-with-basic.yaml,line=10,col=5,title=DIS-2::"
            "TrainJob ml/all-with-basic: spec.scheduling.disruptionMode") in result.log
    assert "::error file=examples/valid" not in result.log


def test_the_valid_examples_pass(workspace, sarif_schema):
    result = act(workspace, files="examples/valid", config="examples/config.yaml", **{"sarif-file": "out/v.sarif"})
    assert result.status == 0 and result.outputs["exit-code"] == "0", result.log
    with open(workspace / "out" / "v.sarif", encoding="utf-8") as f:
        sarif = json.load(f)
    jsonschema.validators.validator_for(sarif_schema)(sarif_schema).validate(sarif)
    assert sarif["runs"][0]["results"] == []


@pytest.fixture
def relaxed(workspace):
    """examples/config.yaml with DIS-2 warned instead of denied (docs/rollout.md#enforcement)."""
    with open(workspace / "examples" / "config.yaml", encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    cfg["enforcement"] = {"rules": {"DIS-2": "warn"}}
    (workspace / "relaxed.yaml").write_text(yaml.safe_dump(cfg))
    return {"files": "examples/invalid/trainjob-all-with-basic.yaml", "config": "relaxed.yaml"}


@pytest.mark.parametrize("fail_on,status", [("deny", 0), ("warn", 1), ("audit", 1), ("never", 0)])
def test_the_step_fails_as_fail_on_says(workspace, relaxed, fail_on, status):
    result = act(workspace, **relaxed, **{"fail-on": fail_on})
    assert result.status == status, result.log
    assert result.outputs["exit-code"] == str(status)
    with open(workspace / "workload-webhook.sarif", encoding="utf-8") as f:
        sarif = json.load(f)
    # A warned violation that fails the run is an error, else a warning: there either way.
    assert findings(sarif) == {("examples/invalid/trainjob-all-with-basic.yaml", 10, "DIS-2",
                                "error" if status else "warning")}
    assert ("::error " if status else "::warning ") + "file=examples/invalid/trainjob-all-with-basic.yaml" in result.log


def test_never_reports_what_fails_without_failing(workspace):
    result = act(workspace, files="examples/invalid", config="examples/config.yaml", **{"fail-on": "never"})
    assert result.status == 0, result.log
    assert result.outputs["exit-code"] == "1"                # what validate said, for a later step
    assert "::notice title=workload-webhook::violations found" in result.log
    assert "::error file=examples/invalid/workload.yaml" in result.log


@pytest.mark.parametrize("with_,message", [
    ({"files": "examples/nowhere"}, "no such file or directory"),
    ({"files": "examples/valid", "config": "examples/missing.yaml"}, "missing.yaml"),
    ({"files": "examples/valid", "fail-on": "error"}, "fail-on is deny, warn, audit or never, not 'error'"),
    ({"files": "examples/valid", "format": "xml"}, "format is github, text, json, junit or none, not 'xml'"),
    ({"files": "examples/valid", "format": "none", "sarif-file": ""}, "nothing would be written"),
    ({"files": " \n \n"}, "files names no path"),
])
def test_an_unusable_input_fails_even_with_never(workspace, with_, message):
    result = act(workspace, **{"fail-on": "never", **with_})
    assert result.status == 2, result.log
    assert message in result.log


def test_lists_become_repeated_flags_and_paths_keep_their_spaces(workspace):
    spaced = workspace / "my manifests"
    spaced.mkdir()
    shutil.copy(workspace / "examples/invalid/trainjob-all-with-basic.yaml", spaced / "train job.yaml")
    with open(workspace / "examples" / "config.yaml", encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    del cfg["profiles"]                  # given as the input profile instead
    (workspace / "targets.yaml").write_text(yaml.safe_dump(cfg))
    result = act(workspace, files="  my manifests/train job.yaml  \n\nexamples/valid\n",
                 config="targets.yaml", crd="examples/crds/trainjob.yaml", profile="jobset, lws",
                 skip="ConfigMap apps/v1/Deployment", **{"fail-on-skipped": "true", "format": "text"})
    assert result.status == 1, result.log
    line = next(x for x in result.log.splitlines() if x.startswith("workload-webhook validate"))
    assert line == ("workload-webhook validate --fail-on deny -f my manifests/train job.yaml -f examples/valid "
                    "--crd examples/crds/trainjob.yaml --profile jobset --profile lws --skip ConfigMap "
                    "--skip apps/v1/Deployment --config targets.yaml --fail-on-skipped")
    assert "my manifests/train job.yaml:10:5: TrainJob ml/all-with-basic" in result.log     # format text
    with open(workspace / "workload-webhook.sarif", encoding="utf-8") as f:
        uris = {f[0] for f in findings(json.load(f))}
    assert uris == {"my%20manifests/train%20job.yaml"}


def test_without_sarif_the_log_format_decides(workspace):
    result = act(workspace, files="examples/invalid", config="examples/config.yaml",
                 **{"sarif-file": "", "format": "junit"})
    assert result.status == 1 and result.outputs["sarif-file"] == "", result.log
    assert not (workspace / "workload-webhook.sarif").exists()
    assert "<testsuites" in result.log and 'type="DIS-2"' in result.log


def test_the_install_checks_pyprojects_python_floor():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        floor = tomllib.load(f)["project"]["requires-python"]
    major, minor = re.fullmatch(r">=(\d+)\.(\d+)", floor).groups()
    action = action_runner.load(ACTION)
    install = next(s for s in action["runs"]["steps"] if s.get("id") == "install")
    assert f"sys.version_info < ({major}, {minor})" in install["run"]
    assert f"needs Python >= {major}.{minor}" in install["run"]
    default = action["inputs"]["python-version"]["default"]
    assert tuple(map(int, default.split("."))) >= (int(major), int(minor))
    assert f">= {major}.{minor}" in action["inputs"]["python-version"]["description"]


def test_the_install_guard_refuses_a_missing_python(workspace):
    """The install step's first lines, run for real: no python3 on PATH is a clear one-line error."""
    env = {"PATH": str(workspace), "HOME": os.environ.get("HOME", "/tmp")}
    result = action_runner.run(REPO, str(workspace), {"install": "true", "python-version": "", "files": "x"},
                               env, str(workspace.parent / "runner-temp"))
    assert result.ran == ["install"] and result.status == 1
    assert "::error title=workload-webhook::python3 is not on PATH: set python-version" in result.log


def test_every_action_is_pinned_by_commit_as_the_release_workflow_pins_it():
    with open(ACTION, encoding="utf-8") as f:
        lines = [line.strip().removeprefix("- ") for line in f if re.match(r"\s*(- )?uses:", line)]
    assert lines and all(re.fullmatch(r"uses: [\w.-]+/[\w.-]+(/[\w.-]+)*@[0-9a-f]{40} # v\d+(\.\d+)*", x)
                         for x in lines), lines
    with open(os.path.join(REPO, ".github", "workflows", "release.yaml"), encoding="utf-8") as f:
        release = {m[1]: m[0] for m in re.findall(r"uses: (([\w.-]+/[\w.-]+)@\S+ # \S+)", f.read())}
    for line in lines:
        spec = line.removeprefix("uses: ")
        name = spec.split("@")[0]
        assert release.get(name, spec) == spec, (name, release[name])
