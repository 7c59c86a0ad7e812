"""docs/cli.md shows every output format of `validate` on a bundled example: each
block there is what the command prints today (stdout), so the reference cannot
drift from the code."""
import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.server.harness import REPO

BLOCK = re.compile(r"<!-- validate-example: (\w+) -->\n```console\n\$ (.*?)\n(.*?)\n```", re.S)


def examples() -> dict[str, tuple[str, str]]:
    with open(os.path.join(REPO, "docs", "cli.md"), encoding="utf-8") as f:
        return {fmt: (command, shown) for fmt, command, shown in BLOCK.findall(f.read())}


def test_every_output_format_is_shown():
    assert sorted(examples()) == ["github", "json", "junit", "sarif", "text"]


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "github"])
def test_the_docs_show_what_the_command_prints(fmt):
    command, shown = examples()[fmt]
    argv = shlex.split(command)
    assert argv[0] == "workload-webhook"
    proc = subprocess.run([sys.executable, "-m", "webhook", *argv[1:]], capture_output=True, text=True, cwd=REPO,
                          timeout=60)
    assert proc.returncode == 1, proc.stderr          # the example is invalid
    assert proc.stdout.rstrip("\n") == shown
