"""A GitHub composite action's steps, run here as the runner runs them: the inputs are the
action's defaults overlaid by `with`, each `${{ … }}` of a step's `env` is replaced as
GitHub would (`inputs.X`, `github.action_path`, `steps.ID.outputs.X`), a step's `if` is
evaluated, and each `run:` is written to a file and run with its `shell:` as GitHub's
`bash` shell runs it (`bash --noprofile --norc -eo pipefail FILE`), with GITHUB_OUTPUT,
RUNNER_TEMP and GITHUB_WORKSPACE set, in the workspace. The first failing step ends the
run, as on GitHub. Only the expression forms the action uses are understood: anything
else fails the test, so the action cannot grow an expression that is never run here."""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess

import yaml

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
NAME = r"[A-Za-z_][\w-]*"
BASH = shutil.which("bash") or "/bin/bash"       # the runner's bash, whatever PATH a step is given
COMPARISON = re.compile(rf"^(inputs\.{NAME})\s*(==|!=)\s*'([^']*)'$")


@dataclasses.dataclass
class Run:
    status: int                        # the exit status of the last step that ran
    outputs: dict[str, str]            # the action's outputs
    log: str                           # what the steps printed (stdout and stderr)
    ran: list[str]                     # the ids (or names) of the steps that ran


def load(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        action = yaml.safe_load(f)
    assert action["runs"]["using"] == "composite", action["runs"]
    return action


class Context:
    def __init__(self, inputs: dict[str, str], action_path: str):
        self.inputs, self.action_path = inputs, action_path
        self.steps: dict[str, dict[str, str]] = {}

    def value(self, expr: str) -> str:
        if m := re.fullmatch(rf"inputs\.({NAME})", expr):
            if m[1] not in self.inputs:
                raise AssertionError(f"${{{{ {expr} }}}}: the action declares no input {m[1]}")
            return self.inputs[m[1]]
        if expr == "github.action_path":
            return self.action_path
        if m := re.fullmatch(rf"steps\.({NAME})\.outputs\.({NAME})", expr):
            return self.steps.get(m[1], {}).get(m[2], "")       # a skipped step's outputs are empty
        raise AssertionError(f"${{{{ {expr} }}}}: an expression this runner does not evaluate")

    def expand(self, text: str) -> str:
        return EXPR.sub(lambda m: self.value(m[1]), str(text))

    def condition(self, text: str | None) -> bool:
        if text is None:
            return True
        text = text.strip()
        if m := EXPR.fullmatch(text):            # `if:` may be written with or without ${{ }}
            text = m[1]
        result = True
        for part in text.split("&&"):
            m = COMPARISON.fullmatch(part.strip())
            if not m:
                raise AssertionError(f"if: {text}: a condition this runner does not evaluate")
            left = self.value(m[1])
            result = result and ((left == m[3]) if m[2] == "==" else (left != m[3]))
        return result


def read_outputs(path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        name, sep, value = lines[i].partition("=")
        if not sep:
            name, sep, delimiter = lines[i].partition("<<")
            assert sep, f"GITHUB_OUTPUT line {lines[i]!r} is neither NAME=VALUE nor NAME<<DELIMITER"
            end = lines.index(delimiter, i + 1)
            value, i = "\n".join(lines[i + 1:end]), end
        out[name] = value
        i += 1
    return out


def run(action_path: str, workspace: str, with_: dict[str, str], env: dict[str, str], temp: str) -> Run:
    """Run the action at `action_path` (its action.yml) in `workspace` with the inputs `with_`."""
    action = load(os.path.join(action_path, "action.yml"))
    declared = action.get("inputs", {})
    unknown = set(with_) - set(declared)
    assert not unknown, f"inputs the action does not declare: {sorted(unknown)}"
    inputs = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    inputs.update({k: str(v) for k, v in with_.items()})
    missing = [n for n, spec in declared.items() if spec.get("required") and not inputs[n]]
    assert not missing, f"required inputs not given: {missing}"
    ctx = Context(inputs, action_path)
    logs, ran, status = [], [], 0
    for index, step in enumerate(action["runs"]["steps"]):
        if not ctx.condition(step.get("if")):
            continue
        step_id = step.get("id", f"step{index}")
        if "uses" in step:
            raise AssertionError(f"step {step_id} uses {step['uses']}: it cannot run here; run with inputs "
                                 "that skip it")
        assert step.get("shell") == "bash", f"step {step_id}: shell {step.get('shell')!r}, not bash"
        script = os.path.join(temp, f"{step_id}.sh")
        outputs = os.path.join(temp, f"{step_id}.outputs")
        with open(script, "w", encoding="utf-8") as f:
            f.write(step["run"])
        open(outputs, "w").close()
        step_env = {**env, "GITHUB_OUTPUT": outputs, "RUNNER_TEMP": temp, "GITHUB_WORKSPACE": workspace,
                    "GITHUB_ACTION_PATH": action_path, "GITHUB_ACTIONS": "true",
                    **{k: ctx.expand(v) for k, v in step.get("env", {}).items()}}
        proc = subprocess.run([BASH, "--noprofile", "--norc", "-eo", "pipefail", script], cwd=workspace,
                              env=step_env, capture_output=True, text=True, timeout=600)
        logs.append(proc.stdout + proc.stderr)
        ran.append(step_id)
        ctx.steps[step_id] = read_outputs(outputs)
        status = proc.returncode
        if status != 0:
            break
    action_outputs = {name: ctx.expand(spec["value"]) for name, spec in action.get("outputs", {}).items()}
    return Run(status, action_outputs, "\n".join(logs), ran)
