"""`workload-webhook completion bash|zsh|fish`, run by the real shells: bash
through its completion function (COMP_WORDS in, COMPREPLY out), fish through
`complete -C`, zsh through an interactive shell on a pseudo-terminal (zpty)
pressing Tab. Every command and every option of the parser is offered.
scripts/test.sh installs zsh and fish."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.server.harness import REPO
from webhook import completion
from webhook.cli import build_parser, main

TREE = completion.tree(build_parser())
COMMANDS = {" ".join(c.path): c for c in completion._walk(TREE)}


def shell(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is missing: scripts/test.sh installs it (apt-get install zsh fish)")
    return path


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    where = tmp_path_factory.mktemp("completion")
    out = {}
    for name in completion.SHELLS:
        proc = subprocess.run([sys.executable, "-m", "webhook", "completion", name], cwd=REPO, capture_output=True,
                              text=True, timeout=60, check=True)
        out[name] = where / f"workload-webhook.{name}"
        out[name].write_text(proc.stdout)
    return out


def bash_complete(script, line: str) -> list[str]:
    """What bash's completion function offers for `line` (the cursor at its end)."""
    words = line.split(" ")
    program = (f"source {script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
               "_workload_webhook; printf '%s\\n' \"${COMPREPLY[@]}\"")
    proc = subprocess.run([shell("bash"), "--norc", "-c", program], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.splitlines() if w]


def test_the_command_prints_a_script_per_shell_and_refuses_others(capsys):
    assert main(["completion", "bash"]) == 0
    assert "complete -o bashdefault -o default -F _workload_webhook workload-webhook" in capsys.readouterr().out
    assert main(["completion", "powershell"]) == 2


def test_bash_offers_every_command_and_every_option(scripts):
    assert bash_complete(scripts["bash"], "workload-webhook ") == list(TREE.subcommands)
    for path, cmd in COMMANDS.items():
        offered = bash_complete(scripts["bash"], f"workload-webhook {path} -".replace("  ", " "))
        assert sorted(offered) == sorted(f for o in cmd.options for f in o.flags), path
    assert "validate" in TREE.subcommands and "completion" in TREE.subcommands


def test_bash_completes_choices_subcommands_and_leaves_paths_to_bash(scripts):
    b = scripts["bash"]
    assert bash_complete(b, "workload-webhook validate -o ") == ["text", "json", "junit", "sarif", "github"]
    assert bash_complete(b, "workload-webhook validate --config c.yaml --fail-on w") == ["warn"]
    assert bash_complete(b, "workload-webhook certs ") == ["generate", "inspect"]
    assert bash_complete(b, "workload-webhook completion ") == ["bash", "zsh", "fish"]
    assert bash_complete(b, "workload-webhook validate --q") == ["--quiet"]
    # A path is bash's own file completion (complete -o default): nothing from the function.
    assert bash_complete(b, "workload-webhook validate -f ") == []
    # An option's value is not taken for a command (`--name validate` stays in webhook-configs).
    assert bash_complete(b, "workload-webhook webhook-configs --name validate --pod-") == ["--pod-failure-policy"]


def fish_complete(script, line: str) -> list[str]:
    proc = subprocess.run([shell("fish"), "--no-config", "-c", f"source {script}; complete -C {line!r}"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return [row.split("\t")[0] for row in proc.stdout.splitlines()]


def test_fish_offers_commands_options_and_choices(scripts):
    f = scripts["fish"]
    assert fish_complete(f, "workload-webhook ") == sorted(TREE.subcommands)
    assert fish_complete(f, "workload-webhook validate -o ") == ["github", "json", "junit", "sarif", "text"]
    assert fish_complete(f, "workload-webhook certs ") == ["generate", "inspect"]
    offered = fish_complete(f, "workload-webhook validate --")
    assert set(offered) == {f for o in COMMANDS["validate"].options for f in o.flags if f.startswith("--")}


# Reads the pseudo-terminal until the awaited text shows (at most 10 s), then prints what came.
_ZPTY = r"""
zmodload zsh/zpty
zpty z zsh -f -i
await() { local i chunk; for i in {1..100}; do
    while zpty -r -t z chunk; do out+=$chunk; done
    [[ $out == *$1* ]] && return; sleep 0.1; done }
zpty -w z "PS1='> '; autoload -U compinit; compinit -u -D; source $SCRIPT; print RE''ADY"
out=""; await READY
zpty -w -n z "$LINE"$'\t'
out=""; await "$AWAIT"
print -r -- "$out"
zpty -d z
"""


def zsh_complete(script, line: str, awaited: str) -> str:
    """The screen after pressing Tab at the end of `line` in an interactive zsh."""
    proc = subprocess.run([shell("zsh"), "-f", "-c", _ZPTY], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SCRIPT": str(script), "LINE": line, "AWAIT": awaited})
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", proc.stdout).replace("\r", "\n")


def test_zsh_offers_commands_and_choices_on_tab(scripts):
    z = scripts["zsh"]
    screen = zsh_complete(z, "workload-webhook validate -o ", "sarif")
    assert all(fmt in screen for fmt in ("github", "json", "junit", "sarif", "text")), screen
    screen = zsh_complete(z, "workload-webhook certs ", "inspect")
    assert "generate  -- write ca.crt/ca.key and tls.crt/tls.key" in screen, screen
    assert "--fail-on-skipped" in zsh_complete(z, "workload-webhook validate --fail-on-s", "--fail-on-skipped")


def test_scripts_parse_in_their_shells(scripts):
    for name, args in (("bash", ["-n"]), ("zsh", ["-f", "-n"]), ("fish", ["-n"])):
        proc = subprocess.run([shell(name), *args, str(scripts[name])], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, (name, proc.stderr)
    assert os.path.getsize(scripts["zsh"]) > 1000
