"""The pre-commit hook (.pre-commit-hooks.yaml) run by the real pre-commit, as a
project that uses it would: `pre-commit try-repo` installs this repository
into its own virtualenv (language: python) and calls the entry with the
project's YAML and JSON files appended (`workload-webhook validate -f a b`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

from tests.server.harness import REPO

pytestmark = pytest.mark.install

PODGROUP = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ml"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}


def pre_commit(project, *args) -> subprocess.CompletedProcess:
    exe = shutil.which("pre-commit")
    if exe is None:
        pytest.fail("pre-commit is missing: it is a test extra (pip install -e '.[test]')")
    env = {**os.environ, "PRE_COMMIT_HOME": str(project.parent / "pre-commit-home"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run([exe, "try-repo", REPO, "workload-webhook-validate", "--verbose", *args], cwd=project,
                          capture_output=True, text=True, timeout=900, env=env)


@pytest.fixture
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("pre-commit") / "project"
    root.mkdir()
    (root / "good.yaml").write_text(yaml.safe_dump(PODGROUP))
    bad = {**PODGROUP, "metadata": {"name": "bad", "namespace": "ml"}, "spec": {"schedulingPolicy": {"gang": {}}}}
    (root / "bad.json").write_text(json.dumps(bad, indent=2))
    (root / "notes.txt").write_text("apiVersion: [not yaml\n")          # neither yaml nor json: not passed
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    subprocess.run(["git", "add", "."], cwd=root, check=True, timeout=60)
    return root


def test_the_hook_judges_the_yaml_and_json_files_it_is_given(project):
    proc = pre_commit(project, "--all-files")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "bad.json:" in out and "PodGroup ml/bad: spec.schedulingPolicy.gang.minCount: Required value" in out
    assert "good.yaml: PodGroup ml/pg: valid" in out
    assert "notes.txt" not in out
    assert "exit 1 because of 1 invalid" in out      # pre-commit may split the files over processes

