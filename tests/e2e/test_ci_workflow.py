"""docs/ci.md's GitHub Actions example passes actionlint (pinned in hack/tools.txt, as
test_release.py runs it), with the action as a local one: in a repository holding this
action.yml at its root, `uses: OWNER/workload-webhook@COMMIT` becomes `uses: ./`, so
actionlint reads action.yml and checks the example's `with:` against its inputs. The lint
can fail: an input the action does not have, or a missing required one, is reported. The
repository's own workflow that runs the action on a runner (.github/workflows/action.yaml)
is linted in place, where `uses: ./` is this action.yml."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.e2e.tools import built_tool
from tests.server.harness import REPO
from tests.unit.test_ci_docs import example

OWN = "OWNER/workload-webhook@COMMIT # v0.1.0"
SELF_TEST = os.path.join(REPO, ".github", "workflows", "action.yaml")


@pytest.fixture(scope="module")
def actionlint() -> str:
    return built_tool("actionlint")


def lint(actionlint: str, root, workflow: str) -> subprocess.CompletedProcess:
    flows = root / ".github" / "workflows"
    flows.mkdir(parents=True, exist_ok=True)
    (flows / "manifests.yaml").write_text(workflow)
    return subprocess.run([actionlint, "-no-color", str(flows / "manifests.yaml")], capture_output=True, text=True,
                          timeout=120, cwd=root)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(os.path.join(REPO, "action.yml"), root / "action.yml")
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    return root


def local(workflow: str) -> str:
    assert workflow.count(OWN) == 1, workflow
    return workflow.replace(OWN, "./")


def test_the_example_workflow_passes_actionlint_with_the_action_read_locally(actionlint, repo):
    proc = lint(actionlint, repo, local(example("github")))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_example_as_published_passes_actionlint(actionlint, repo):
    proc = lint(actionlint, repo, example("github"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("edit,reported", [
    (("fail-on: deny", "fail_on: deny"), 'input "fail_on" is not defined'),
    (("files: |", "paths: |"), 'missing input "files"'),
    (("${{ !cancelled()", "${{ !canceled()"), "canceled"),
])
def test_actionlint_reports_what_the_action_does_not_take(actionlint, repo, edit, reported):
    proc = lint(actionlint, repo, local(example("github")).replace(*edit))
    assert proc.returncode != 0 and reported in proc.stdout, proc.stdout


def test_the_repositorys_action_workflow_passes_actionlint_and_pins_by_commit(actionlint):
    proc = subprocess.run([actionlint, "-no-color", SELF_TEST], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(SELF_TEST, encoding="utf-8") as f:
        uses = [line.strip().removeprefix("- ") for line in f if re.match(r"\s*(- )?uses:", line)]
    assert uses.count("uses: ./") == 2
    assert all(u == "uses: ./" or re.fullmatch(r"uses: [\w.-]+/[\w.-]+@[0-9a-f]{40} # v[\d.]+", u) for u in uses), uses
