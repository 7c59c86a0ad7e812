"""The composite action's install step as it runs on a runner (tests/unit/action_runner.py):
from a copy of the action's checkout, the runner's python3 (python-version empty, so no
actions/setup-python, which cannot run here), into a new virtualenv in RUNNER_TEMP, the
dependencies from PyPI pinned by constraints.txt, as the other install tests get them.
Then the validate step runs that venv's CLI, with nothing of this environment on its path;
the checkout is left as it was."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib

import pytest

from tests.server.harness import REPO
from tests.unit import action_runner

pytestmark = pytest.mark.install

CHECKOUT = ("action.yml", "pyproject.toml", "README.md", "constraints.txt", "webhook", "schemas")


def tree(root) -> dict[str, int]:
    return {os.path.relpath(os.path.join(d, f), root): os.path.getsize(os.path.join(d, f))
            for d, _, files in os.walk(root) for f in files}


def test_the_action_installs_the_cli_from_its_checkout_and_runs_it(tmp_path):
    checkout = tmp_path / "action"
    checkout.mkdir()
    for name in CHECKOUT:
        src = os.path.join(REPO, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, checkout / name)
    before = tree(checkout)
    workspace, temp = tmp_path / "workspace", tmp_path / "runner-temp"
    shutil.copytree(os.path.join(REPO, "examples"), workspace / "examples")
    temp.mkdir()
    env = {"PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"]),
           "HOME": os.environ.get("HOME", str(tmp_path)), "LANG": "C.UTF-8",
           **{k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("SSL_CERT_FILE", "HTTPS_PROXY")}}
    result = action_runner.run(str(checkout), str(workspace), {"files": "examples/invalid", "python-version": "",
                                                               "config": "examples/config.yaml"}, env, str(temp))
    assert result.ran == ["install", "validate"], result.log
    assert result.status == 1 and result.outputs["exit-code"] == "1", result.log[-3000:]
    executable = result.outputs["executable"]
    assert executable == str(temp / "workload-webhook-venv" / "bin" / "workload-webhook")
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert f"workload-webhook {version}" in result.log
    # The venv's own copy ran: its webhook package is in the venv, not this tree.
    where = subprocess.run([str(temp / "workload-webhook-venv" / "bin" / "python"), "-c",
                            "import webhook; print(webhook.__file__)"], capture_output=True, text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path).stdout.strip()
    assert where.startswith(str(temp / "workload-webhook-venv")), where
    with open(workspace / "workload-webhook.sarif", encoding="utf-8") as f:
        sarif = json.load(f)
    assert any(r["ruleId"] == "DIS-2" for r in sarif["runs"][0]["results"])
    assert tree(checkout) == before                      # built from a copy: the checkout stays clean
