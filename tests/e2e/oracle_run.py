"""The one way the differential tests ask the oracle (hack/oracle, built by
hack/build-oracle.sh in the setup): cases as JSON lines in, one answer per
case out, keyed by the case's `id`."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.e2e.oracle_differences import REPO


def binary() -> str:
    path = subprocess.run([os.path.join(REPO, "hack", "build-oracle.sh"), "--path"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if not os.access(path, os.X_OK):
        pytest.fail(f"the oracle {path} is missing: hack/build-oracle.sh builds it (scripts/test.sh does, in its "
                    "setup)", pytrace=False)
    return path


def ask(cases: list[dict], timeout: float = 600) -> dict:
    """{id: answer} for every case (each must carry an `id`); fails unless each is answered."""
    proc = subprocess.run([binary()], input="".join(json.dumps(c) + "\n" for c in cases),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"the oracle failed: {proc.stderr[-2000:]}"
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    assert len(answers) == len(cases), f"the oracle answered {len(answers)} of {len(cases)} cases"
    return answers
