"""The README's quick start, run as it stands (issue 37, point 1): every ```sh block of the
section, in the page's order, verbatim, by bash, on the real 1.37 node (tests/e2e/node.py) with
the real kubectl and helm, in a directory holding what the page assumes (the checkout's
`charts/` and `examples/`). A plain ``` block right after a ```sh block is what that block prints:
each of its lines must be a line of the block's output. A block fails the test when any of its
commands fails, except its last one when what it shows is that command's error (the denial).

Nothing is substituted: the page names the image as the chart expects it
(`workload-webhook:<appVersion>`), which is the name hack/build-images.sh gives the image it
builds from the Dockerfile, and the node's containerd also knows the node's pause image by the
name the page runs (`registry.k8s.io/pause:3.10`), as a node that pulled it would."""
from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass

import pytest
import yaml

from tests.e2e import summary
from tests.server.harness import REPO

README = os.path.join(REPO, "README.md")
CHART_YAML = os.path.join(REPO, "charts", "workload-webhook", "Chart.yaml")
FAILED = "__readme_block_failed__"


@dataclass
class Block:
    script: str            # the ```sh block's text
    shows: list[str]       # the lines of the plain block after it ([] when none)


def quick_start(text: str) -> str:
    start = text.index("## Quick start")
    return text[start:text.index("\n## ", start + 1)]


def blocks(section: str) -> list[Block]:
    """The ```sh blocks in order, each with the plain block that follows it, if one does
    before the next ```sh block."""
    out: list[Block] = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```$", section, flags=re.M | re.S):
        if lang == "sh":
            out.append(Block(body, []))
        elif lang == "" and out and not out[-1].shows:
            out[-1].shows = [line.strip() for line in body.splitlines() if line.strip()]
    return out


def last_command_line(script: str) -> int:
    """The 1-based line where the block's last command starts (a heredoc's body and
    backslash continuations belong to the command before them)."""
    lines, start, i, heredoc = script.splitlines(), 0, 0, None
    while i < len(lines):
        line = lines[i]
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
        elif line.strip() and not line.lstrip().startswith("#"):
            if i == 0 or not lines[i - 1].endswith("\\"):
                start = i + 1
            m = re.search(r"<<-?'?(\w+)'?", line)
            heredoc = m.group(1) if m else None
        i += 1
    return start


# ------------------------------------------------------------------ pure parts, no cluster

def test_the_parser_reads_blocks_their_output_and_the_last_command():
    section = "## Quick start\n```sh\na\nb \\\n  c\n```\ntext\n```\nout 1\n\nout 2\n```\n```yaml\nx: 1\n```\n" \
              "```sh\ncat <<'Y'\nz\nY\n```\n## Next\n"
    got = blocks(quick_start(section))
    assert [b.shows for b in got] == [["out 1", "out 2"], []]
    assert last_command_line(got[0].script) == 2 and last_command_line(got[1].script) == 1


def test_the_page_names_the_image_as_the_chart_expects_it():
    version = yaml.safe_load(open(CHART_YAML))["appVersion"]
    values = yaml.safe_load(open(os.path.join(REPO, "charts", "workload-webhook", "values.yaml")))
    section = quick_start(open(README, encoding="utf-8").read())
    assert values["image"]["repository"] == "workload-webhook" and not values["image"]["tag"]
    assert f"docker build -t workload-webhook:{version} ." in section
    assert f"kind load docker-image workload-webhook:{version}" in section
    # The order that keeps `helm install --wait` from waiting for ever: the target's CRD first.
    assert section.index("kubectl apply -f examples/crds/trainjob.yaml") < section.index("helm install")
    assert "kube-scheduler" in section and "kube-controller-manager" in section


# ------------------------------------------------------------------ on the real node

@pytest.fixture
def workdir(tmp_path):
    """What the page assumes: the checkout's top directory (its charts and examples)."""
    for d in ("charts", "examples"):
        shutil.copytree(os.path.join(REPO, d), tmp_path / d)
    return tmp_path


def run_block(node, workdir, n: int, block: Block):
    script = workdir / f"block-{n}.sh"
    # A preamble of three lines (the block's own lines are numbered after them): the environment
    # a reader's shell has (kubectl and helm on PATH), then bash stops at the first failure and
    # says on which of the block's lines.
    script.write_text(f"cd {workdir} && export PATH={node.bin_dir}:\"$PATH\"\nset -eE -o pipefail\n"
                      f"trap 'echo {FAILED} $((LINENO - 3)) >&2' ERR\n" + block.script)
    return node.run(["bash", str(script)], check=False, timeout=420)


def test_the_readme_quick_start_runs_verbatim_on_a_real_node(real_node, images, workdir):
    node = real_node
    version = yaml.safe_load(open(CHART_YAML))["appVersion"]
    assert images["WEBHOOK_IMAGE"] == f"docker.io/library/workload-webhook:{version}", images
    node.tag_image(images["PAUSE_IMAGE"], "registry.k8s.io/pause:3.10")
    page = blocks(quick_start(open(README, encoding="utf-8").read()))
    assert len(page) >= 5, page
    took = []
    try:
        for n, block in enumerate(page, 1):
            t0 = time.monotonic()
            proc = run_block(node, workdir, n, block)
            took.append(time.monotonic() - t0)
            output = proc.stdout + proc.stderr
            where = f"README quick start, block {n}:\n{block.script}\n--- it printed:\n{output[-4000:]}"
            failed = re.search(rf"^{FAILED} (\d+)$", proc.stderr, flags=re.M)
            if failed:
                # Only the last command may fail, and only when the page shows its error.
                assert int(failed.group(1)) == last_command_line(block.script) and block.shows, \
                    f"{where}\n{node.diagnose('workload-webhook')}"
            else:
                assert proc.returncode == 0, f"{where}\n{node.diagnose('workload-webhook')}"
            lines = {line.strip() for line in output.splitlines()}
            missing = [line for line in block.shows if line not in lines]
            assert not missing, f"the page shows {missing}, the product printed otherwise.\n{where}"
        # The last block removed it all: no webhook configuration is left.
        left = node.kubectl("get", "validatingwebhookconfigurations,mutatingwebhookconfigurations", "-o", "name").stdout
        assert "workload-webhook" not in left, left
    finally:
        node.helm("uninstall", "workload-webhook", "-n", "workload-webhook", "--wait", check=False, timeout=180)
        for ns in ("ml", "workload-webhook"):
            node.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false", check=False)
    summary.add("real node: the README's quick start, " + ", ".join(
        f"block {n} {t:.1f} s" for n, t in enumerate(took, 1)))
