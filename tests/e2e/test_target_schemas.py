"""`workload-webhook schemas --target KIND`: the schema of a configured target or
profile kind, for editors (the YAML language server's `# yaml-language-server:
$schema=` modeline, which the examples carry) and for kubeconform (built from
the Go module proxy by hack/build-kubeconform.sh). Valid examples pass; each
invalid one fails at a field the webhook also reports."""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from jsonschema import Draft202012Validator

from tests.server.harness import REPO
from webhook import config as config_mod
from webhook import engine

CONFIG = os.path.join(REPO, "examples", "config.yaml")
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.M)
TARGET_KINDS = ("TrainJob", "GroupJob", "JobSet", "LeaderWorkerSet")


def _examples(kind_dir: str) -> list[str]:
    return sorted(f for f in glob.glob(os.path.join(REPO, "examples", kind_dir, "*.yaml")) if MODELINE.search(open(f).read()))


def _webhook_fields(path: str) -> set[str]:
    """The fields the webhook reports for a file, as JSON pointers."""
    cfg = config_mod.load(CONFIG)
    out = set()
    for doc in yaml.safe_load_all(open(path)):
        for e in engine.validate(engine.Request.for_object(doc), cfg).errors:
            out.add("/" + "/".join(str(s) for s in e.field))
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("schemas")
    for kind in TARGET_KINDS:
        proc = subprocess.run([sys.executable, "-m", "webhook", "schemas", "--target", kind, "--config", CONFIG,
                               "--out", str(out)], capture_output=True, text=True, cwd=REPO, timeout=60)
        assert proc.returncode == 0, proc.stderr
    return str(out)


@pytest.fixture(scope="module")
def kubeconform() -> str:
    proc = subprocess.run([os.path.join(REPO, "hack", "build-kubeconform.sh")], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"real component unavailable: kubeconform did not build:\n{proc.stderr[-2000:]}", pytrace=False)
    return proc.stdout.strip().splitlines()[-1]


def test_the_examples_schemas_are_what_the_command_generates(generated):
    committed = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, "examples", "schemas", "*.json")))
    assert committed == sorted(os.listdir(generated))
    for name in committed:
        with open(os.path.join(REPO, "examples", "schemas", name)) as a, open(os.path.join(generated, name)) as b:
            assert json.load(a) == json.load(b), f"examples/schemas/{name} is stale: rerun `schemas --target --out`"


@pytest.mark.parametrize("path", _examples("valid") + _examples("invalid"), ids=os.path.basename)
def test_the_modeline_schema_judges_like_the_webhook(path):
    text = open(path).read()
    schema_path = os.path.normpath(os.path.join(os.path.dirname(path), MODELINE.search(text).group(1)))
    validator = Draft202012Validator(json.load(open(schema_path)))
    found = {"/" + "/".join(str(s) for s in e.absolute_path) for doc in yaml.safe_load_all(text)
             for e in validator.iter_errors(doc)}
    if "/valid/" in path:
        assert found == set()
    else:
        assert found and found & _webhook_fields(path), (found, _webhook_fields(path))


def test_kubeconform_passes_the_valid_examples(kubeconform, generated):
    files = _examples("valid")
    proc = subprocess.run([kubeconform, "-summary", "-output", "json", "-schema-location",
                           os.path.join(generated, "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"), *files],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["summary"]["valid"] == sum(1 for f in files for _ in yaml.safe_load_all(open(f)))


@pytest.mark.parametrize("path", _examples("invalid"), ids=os.path.basename)
def test_kubeconform_refuses_each_invalid_example_at_a_field_the_webhook_reports(kubeconform, generated, path):
    proc = subprocess.run([kubeconform, "-output", "json", "-schema-location",
                           os.path.join(generated, "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"), path],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    messages = " ".join(r["msg"] for r in json.loads(proc.stdout)["resources"])
    assert "statusInvalid" in proc.stdout
    assert any(f"at '{field}'" in messages for field in _webhook_fields(path)), (messages, _webhook_fields(path))
