"""A release anyone can install from (issue 30, point 5; issue 37), as far as it can be checked
here: the chart packages (helm package) into exactly its files, at the package's version; the
checked-in chart names no owner, and the release workflow's packaging step (run here on a copy of
the chart, with the built helm) stamps the package with the repository it runs in and the image
it pushed (hack/stamp-release.py); the workflow passes actionlint (pinned in hack/tools.txt) and
does what a release needs (multi-arch image from the Dockerfile on a pinned base, SBOM, keyless
signatures, the chart pushed as an OCI artifact, every action pinned by commit); docs/helm.md's
released-chart commands name the owner once. The image itself is in test_image.py."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tomllib

import pytest
import yaml

from tests.e2e.test_chart_templates import CHART
from tests.e2e.tools import built_tool
from tests.server.harness import REPO

WORKFLOW = os.path.join(REPO, ".github", "workflows", "release.yaml")
PACKAGE_FILES = {"Chart.yaml", "values.yaml", "values.schema.json", ".helmignore", "dashboards/workload-webhook.json",
                 "templates/NOTES.txt", "templates/_helpers.tpl", "templates/_webhooks.tpl", "templates/tests/check.yaml",
                 *(f"templates/{t}.yaml" for t in (
                     "audit", "certmanager", "configmap", "deployment", "grafanadashboard", "networkpolicy", "pdb",
                     "podpolicy", "prometheusrule", "rbac", "registrationpolicy", "secret", "service", "serviceaccount",
                     "servicemonitor", "vap", "webhooks"))}


def project_version() -> str:
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]["version"]


def chart_meta() -> dict:
    with open(os.path.join(CHART, "Chart.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def workflow() -> dict:
    with open(WORKFLOW, encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="session")
def actionlint() -> str:
    return built_tool("actionlint")


def test_helm_package_holds_the_chart_at_the_package_version(bin_dir, tmp_path):
    version = project_version()
    proc = subprocess.run([os.path.join(bin_dir, "helm"), "package", CHART, "-d", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    package = tmp_path / f"workload-webhook-{version}.tgz"
    assert f"Successfully packaged chart and saved it to: {package}" in proc.stdout
    with tarfile.open(package) as tgz:
        names = {n.removeprefix("workload-webhook/") for n in tgz.getnames()}
        packaged = yaml.safe_load(tgz.extractfile("workload-webhook/Chart.yaml"))
    assert names == PACKAGE_FILES, (sorted(names - PACKAGE_FILES), sorted(PACKAGE_FILES - names))
    assert (packaged["version"], packaged["appVersion"]) == (version, version)
    # The package installs as the directory does: helm renders it.
    proc = subprocess.run([os.path.join(bin_dir, "helm"), "template", "ww", str(package)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "kind: Deployment" in proc.stdout, proc.stderr


def test_the_checked_in_chart_names_no_owner(bin_dir):
    """Where the chart comes from is the release's to write: the checkout says nothing it would
    have to be edited for, and still lints strictly (a missing icon is only helm's INFO)."""
    meta = chart_meta()
    assert not {"home", "sources", "icon"} & set(meta), meta
    assert meta["maintainers"] and all(set(m) == {"name"} and m["name"] for m in meta["maintainers"])
    assert set(meta["annotations"]) == {"artifacthub.io/license"}
    with open(os.path.join(CHART, "Chart.yaml"), encoding="utf-8") as f:
        assert "OWNER" not in f.read()
    assert os.path.exists(os.path.join(CHART, "icon.svg"))       # what the release's icon URL points at
    proc = subprocess.run([os.path.join(bin_dir, "helm"), "lint", "--strict", CHART], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "1 chart(s) linted, 0 chart(s) failed" in proc.stdout, proc.stdout
    assert [line for line in proc.stdout.splitlines() if line.startswith("[")] == \
        ["[INFO] Chart.yaml: icon is recommended"], proc.stdout


def test_the_release_workflow_passes_actionlint(actionlint):
    proc = subprocess.run([actionlint, "-no-color", WORKFLOW], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_finds_what_is_wrong(actionlint, tmp_path):
    """The lint can fail: the workflow with an expression it cannot type."""
    with open(WORKFLOW, encoding="utf-8") as f:
        text = f.read()
    broken = tmp_path / ".github" / "workflows"
    broken.mkdir(parents=True)
    (broken / "release.yaml").write_text(text.replace("${{ steps.meta.outputs.image }}", "${{ steps.meta.output.image }}"))
    proc = subprocess.run([actionlint, "-no-color", str(broken / "release.yaml")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode != 0 and "output" in proc.stdout, proc.stdout


def test_the_workflow_builds_signs_and_publishes_what_a_release_needs():
    flow = workflow()
    steps = flow["jobs"]["release"]["steps"]
    uses = [s["uses"] for s in steps if "uses" in s]
    # Every action pinned by a full commit SHA, with its tag in a comment.
    with open(WORKFLOW, encoding="utf-8") as f:
        lines = [line for line in f if "uses:" in line]
    assert lines and all(re.search(r"uses: [\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d", line) for line in lines), lines
    names = {u.split("@")[0] for u in uses}
    assert {"docker/build-push-action", "docker/setup-qemu-action", "docker/setup-buildx-action",
            "sigstore/cosign-installer", "anchore/sbom-action", "azure/setup-helm"} <= names
    build = next(s for s in steps if s.get("uses", "").startswith("docker/build-push-action@"))
    assert flow["env"]["PLATFORMS"] == "linux/amd64,linux/arm64" and build["with"]["platforms"] == "${{ env.PLATFORMS }}"
    assert build["with"]["file"] == "Dockerfile" and "BASE_IMAGE=${{ env.BASE_IMAGE }}" in build["with"]["build-args"]
    assert build["env"]["SOURCE_DATE_EPOCH"] and "SOURCE_DATE_EPOCH=" in build["with"]["build-args"]
    assert re.fullmatch(r"docker\.io/library/debian:bookworm-slim@sha256:[0-9a-f]{64}", flow["env"]["BASE_IMAGE"])
    assert re.fullmatch(r"\d{8}T\d{6}Z", flow["env"]["DEBIAN_SNAPSHOT"])
    assert flow["jobs"]["release"]["permissions"]["id-token"] == "write"      # keyless: the workflow's OIDC identity
    script = "\n".join(s.get("run", "") for s in steps)
    assert 'cosign sign --yes "${IMAGE}"' in script and "cosign attest --yes --type spdxjson" in script
    assert "helm package charts/workload-webhook" in script and 'helm push "dist/workload-webhook-${VERSION}.tgz" "${CHARTS}"' in script
    assert "charts=oci://${REGISTRY}/${owner}/charts" in script and flow["env"]["REGISTRY"] == "ghcr.io"
    assert re.search(r'cosign sign --yes "\$\{CHARTS#oci://\}/workload-webhook@\$\{digest\}"', script)


SOURCE = "https://github.com/Example-Org/workload-webhook"
DIGEST = "sha256:" + "ab" * 32
STAMPED_VALUES = ("registry", "repository", "digest", "runbookBaseURL")


def run_step(step: dict, env: dict, cwd, tmp_path, bin_dir: str) -> subprocess.CompletedProcess:
    """A workflow step's `run` as the runner runs it (bash -e, the step's env), with the built helm."""
    script = tmp_path / f"step-{len(os.listdir(tmp_path))}.sh"
    script.write_text(step["run"])
    full = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path), **env}
    return subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", str(script)], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=120)


def expression(value: str, contexts: dict) -> str:
    """${{ ... }} in an env value, from the contexts given; any other fails the test."""
    def one(m):
        assert m.group(1) in contexts, f"the test does not know ${{{{ {m.group(1)} }}}}"
        return contexts[m.group(1)]
    return re.sub(r"\$\{\{ ([\w.-]+) \}\}", one, value)


def meta_outputs(tmp_path, bin_dir, ref_type: str) -> dict:
    flow = workflow()
    step = next(s for s in flow["jobs"]["release"]["steps"] if s.get("id") == "meta")
    out = tmp_path / f"output-{ref_type}"
    version = project_version()
    proc = run_step(step, {**flow["env"], "GITHUB_OUTPUT": str(out), "GITHUB_REF_TYPE": ref_type,
                           "GITHUB_REF_NAME": f"v{version}" if ref_type == "tag" else "main",
                           "GITHUB_REPOSITORY_OWNER": "Example-Org", "GITHUB_SHA": "c0ffee" * 6 + "c0ff"},
                    REPO, tmp_path, bin_dir)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split("=", 1) for line in out.read_text().splitlines())


def test_the_release_stamps_the_package_with_the_repository_and_its_image(bin_dir, tmp_path):
    """The workflow's own steps, run here: the meta step, then the packaging step on a copy of
    the chart (hack/stamp-release.py, helm lint --strict, helm package, and its own checks)."""
    flow = workflow()
    version = project_version()
    assert meta_outputs(tmp_path, bin_dir, "branch")["ref"] == "c0ffee" * 6 + "c0ff"    # run by hand: the commit
    outputs = meta_outputs(tmp_path, bin_dir, "tag")
    assert (outputs["version"], outputs["ref"]) == (version, f"v{version}")
    assert outputs["image"] == "ghcr.io/example-org/workload-webhook"                     # ghcr.io is lowercase
    step = next(s for s in flow["jobs"]["release"]["steps"] if "hack/stamp-release.py" in s.get("run", ""))
    contexts = {"github.server_url": "https://github.com", "github.repository": "Example-Org/workload-webhook",
                "steps.build.outputs.digest": DIGEST, **{f"steps.meta.outputs.{k}": v for k, v in outputs.items()}}
    env = {k: expression(str(v), contexts) for k, v in step["env"].items()}
    assert env["SOURCE_URL"] == SOURCE
    work = tmp_path / "checkout"
    shutil.copytree(CHART, work / "charts" / "workload-webhook")
    (work / "hack").mkdir()
    shutil.copy(os.path.join(REPO, "hack", "stamp-release.py"), work / "hack")
    proc = run_step(step, {**flow["env"], **env}, work, tmp_path, bin_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    package = work / "dist" / f"workload-webhook-{version}.tgz"
    with tarfile.open(package) as tgz:
        meta = yaml.safe_load(tgz.extractfile("workload-webhook/Chart.yaml"))
        values_text = tgz.extractfile("workload-webhook/values.yaml").read().decode()
    assert (meta["home"], meta["sources"]) == (SOURCE, [SOURCE])
    assert meta["icon"] == f"{SOURCE}/raw/v{version}/charts/workload-webhook/icon.svg"
    assert [m["url"] for m in meta["maintainers"]] == [SOURCE]
    assert yaml.safe_load(meta["annotations"]["artifacthub.io/links"]) == [
        {"name": "Documentation", "url": f"{SOURCE}/blob/v{version}/docs/helm.md"}]
    # Only the stamped lines differ from the checkout's values.yaml: every comment stays.
    with open(os.path.join(CHART, "values.yaml"), encoding="utf-8") as f:
        checkout = f.read().splitlines()
    changed = [(a, b) for a, b in zip(checkout, values_text.splitlines()) if a != b]
    assert len(checkout) == len(values_text.splitlines())
    assert sorted(a.split(":")[0].strip() for a, _ in changed) == sorted(STAMPED_VALUES), changed
    values = yaml.safe_load(values_text)
    assert (values["image"]["registry"], values["image"]["repository"], values["image"]["digest"]) == \
        ("ghcr.io", "example-org/workload-webhook", DIGEST)
    assert values["prometheusRule"]["runbookBaseURL"] == f"{SOURCE}/blob/v{version}/docs/operations.md"
    helm = os.path.join(bin_dir, "helm")
    proc = subprocess.run([helm, "lint", "--strict", str(package)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "icon is recommended" not in proc.stdout, proc.stdout
    proc = subprocess.run([helm, "template", "ww", str(package), "--set", "prometheusRule.enabled=true"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f'image: "ghcr.io/example-org/workload-webhook:{version}@{DIGEST}"' in proc.stdout
    assert f"runbook_url: {SOURCE}/blob/v{version}/docs/operations.md#workloadwebhook" in proc.stdout


def test_the_stamp_refuses_what_it_cannot_stamp_in_one_line(tmp_path):
    chart = tmp_path / "workload-webhook"
    shutil.copytree(CHART, chart)
    args = [os.path.join(REPO, "hack", "stamp-release.py"), str(chart), "--source-url", SOURCE, "--ref", "v1.0.0",
            "--registry", "ghcr.io", "--repository", "example-org/workload-webhook"]
    proc = subprocess.run([*args, "--digest", "sha256:abc"], capture_output=True, text=True, timeout=30)
    assert (proc.returncode, proc.stderr.count("\n")) == (2, 1) and "--digest 'sha256:abc'" in proc.stderr, proc.stderr
    assert subprocess.run([*args, "--digest", DIGEST], capture_output=True, timeout=30).returncode == 0
    proc = subprocess.run([*args, "--digest", DIGEST], capture_output=True, text=True, timeout=30)   # twice
    assert (proc.returncode, proc.stderr.count("\n")) == (2, 1) and "`home` is already set" in proc.stderr, proc.stderr


def test_helm_md_names_the_owner_of_the_released_chart_once():
    """The released chart's commands use ${OWNER}, set in one place a reader edits."""
    with open(os.path.join(REPO, "docs", "helm.md"), encoding="utf-8") as f:
        page = f.read()
    assert len(re.findall(r"^OWNER=", page, re.M)) == 1
    assert "ghcr.io/OWNER" not in page and "github.com/OWNER" not in page
    assert re.search(r"oci://ghcr\.io/\$\{OWNER\}/charts/workload-webhook", page)
