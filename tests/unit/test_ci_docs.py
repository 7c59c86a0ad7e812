"""docs/ci.md matches what it documents: its inputs table is action.yml's inputs with their
defaults, the Python floor it states is pyproject's, every `workload-webhook` command it
shows parses with the CLI's own parser, its examples pin every action by commit (the same
commit the repository pins elsewhere), the links into the other pages land on headings, and
docs/cli.md links to it. The GitHub example is linted by actionlint in
tests/e2e/test_ci_workflow.py."""
from __future__ import annotations

import os
import re
import shlex
import tomllib

import pytest
import yaml

from tests.server.harness import REPO
from tests.unit import action_runner
from webhook.cli import build_parser
from webhook.commands import validate as validate_command

DOCS = os.path.join(REPO, "docs")
PIN = re.compile(r"uses: ([\w.-]+/[\w.-]+(?:/[\w.-]+)*)@([0-9a-f]{40}) # (v\d+(?:\.\d+)*)")


def page(name: str = "ci.md") -> str:
    with open(os.path.join(DOCS, name), encoding="utf-8") as f:
        return f.read()


def example(name: str) -> str:
    """The YAML block after `<!-- ci-example: NAME -->`."""
    m = re.search(rf"<!-- ci-example: {name} -->\n```yaml\n(.*?)\n```", page(), re.S)
    assert m, f"docs/ci.md has no ci-example {name}"
    return m[1]


def commands() -> list[list[str]]:
    """Every `workload-webhook …` command of the page's sh blocks and of the GitLab job's script."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", page(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            for part in re.split(r"&&|\|", line.split(" #", 1)[0].split(" > ", 1)[0]):
                argv = shlex.split(part)
                if argv and argv[0] in ("docker",) and "validate" in argv:
                    argv = argv[argv.index("validate") - 1:]
                    argv[0] = "workload-webhook"
                if argv and os.path.basename(argv[0]) == "workload-webhook":
                    found.append(argv)
    job = yaml.safe_load(example("gitlab"))["workload-webhook"]
    for line in job["script"]:
        argv = shlex.split(line.split(">", 1)[0])
        if os.path.basename(argv[0]) == "workload-webhook":
            found.append(argv)
    return found


def test_the_inputs_table_is_action_yml():
    rows = re.findall(r"^\| `([\w-]+)` \|([^|]*)\| ", page(), re.M)
    action = action_runner.load(os.path.join(REPO, "action.yml"))
    documented = {name: default.strip().strip("`") for name, default in rows}
    declared = {name: ("(required)" if spec.get("required") else str(spec.get("default", "")))
                for name, spec in action["inputs"].items()}
    assert documented == declared
    outputs = re.search(r"^Outputs: (.*)$", page(), re.M)[1]
    assert set(re.findall(r"`([\w-]+)`", outputs)) == set(action["outputs"])


def test_the_python_floor_is_pyprojects():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        floor = tomllib.load(f)["project"]["requires-python"].removeprefix(">=")
    stated = set(re.findall(r"Python >= (\d+\.\d+)", page()))
    assert stated == {floor}
    assert re.findall(r"image: python:(\d+\.\d+)", example("gitlab")) == [floor]


def test_every_command_shown_parses():
    argvs = commands()
    assert sum(a[1:2] == ["validate"] for a in argvs) >= 3, argvs     # a checkout's venv, the image, GitLab
    parser = build_parser()
    for argv in argvs:
        args = parser.parse_args(argv[1:])
        assert args.func is validate_command.run and args.filename, argv


def test_the_examples_pin_every_action_by_commit_as_the_repository_does():
    text = example("github")
    uses = re.findall(r"uses: (\S+)(.*)", text)
    pins = PIN.findall(text)
    own = [u for u, _ in uses if u.startswith("OWNER/workload-webhook@")]
    assert own == ["OWNER/workload-webhook@COMMIT"]                 # the placeholder the page explains
    assert len(pins) == len(uses) - 1, uses
    elsewhere = {}
    for path in (os.path.join(REPO, "action.yml"), os.path.join(REPO, ".github", "workflows", "release.yaml")):
        with open(path, encoding="utf-8") as f:
            elsewhere.update({name: (sha, tag) for name, sha, tag in PIN.findall(f.read())})
    for name, sha, tag in pins:
        assert elsewhere.get(name, (sha, tag)) == (sha, tag), name
    assert {n for n, _, _ in pins} == {"actions/checkout", "github/codeql-action/upload-sarif"}


def test_the_github_example_uploads_the_sarif_the_action_writes_even_when_validate_fails():
    flow = yaml.safe_load(example("github"))
    [job] = flow["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    steps = job["steps"]
    validate = next(s for s in steps if s.get("uses", "").startswith("OWNER/workload-webhook@"))
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    default = action_runner.load(os.path.join(REPO, "action.yml"))["inputs"]["sarif-file"]["default"]
    assert upload["with"]["sarif_file"] == validate["with"].get("sarif-file", default)
    assert "!cancelled()" in upload["if"] and steps.index(upload) > steps.index(validate)


@pytest.mark.parametrize("target", sorted(set(re.findall(r"\]\(([\w.-]+\.md)#([\w-]+)\)", page()))))
def test_the_links_land_on_headings(target):
    name, anchor = target
    headings = {re.sub(r"[^\w -]", "", h.lower()).replace(" ", "-") for h in
                re.findall(r"^#+ (.*)$", page(name), re.M)}
    assert anchor in headings, (name, anchor)


def test_the_pages_own_anchors_exist():
    headings = {re.sub(r"[^\w -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.*)$", page(), re.M)}
    assert set(re.findall(r"\]\(#([\w-]+)\)", page())) <= headings


def test_cli_md_links_here_from_its_ci_section():
    cli = page("cli.md")
    section = cli[cli.index("### In CI and pre-commit"):cli.index("\n## ", cli.index("### In CI and pre-commit"))]
    assert "(ci.md)" in section
