"""The pinned Go tools the e2e tests run (hack/tools.txt), built by the setup with
hack/build-tool.sh and cached outside the repo, so asking again is instant. A tool that does
not build fails the test that needs it, with the build's output (never a skip)."""
from __future__ import annotations

import os
import subprocess

import pytest

from tests.server.harness import REPO


def built_tool(name: str) -> str:
    proc = subprocess.run([os.path.join(REPO, "hack", "build-tool.sh"), name], capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode != 0:
        pytest.fail(f"real component unavailable: {name} did not build:\n{proc.stderr[-2000:]}", pytrace=False)
    return proc.stdout.strip().splitlines()[-1]
