"""A release anyone can install from (issue 30, point 5), as far as it can be checked here: the
chart packages (helm package) into exactly its files, at the package's version; the release
workflow passes actionlint (pinned in hack/tools.txt) and does what a release needs (multi-arch
image from the Dockerfile on a pinned base, SBOM, keyless signatures, the chart pushed as an OCI
artifact, every action pinned by commit); README's first step installs that artifact; the
placeholder owner is the same everywhere. The image itself is in test_image.py."""
from __future__ import annotations

import os
import re
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


def test_chart_yaml_says_where_it_comes_from(bin_dir):
    meta = chart_meta()
    owner = "OWNER"            # the placeholder until the repository has a public home
    assert meta["home"] == f"https://github.com/{owner}/workload-webhook"
    assert meta["sources"] == [meta["home"]]
    assert meta["icon"].startswith(f"https://raw.githubusercontent.com/{owner}/workload-webhook/")
    assert meta["icon"].endswith("/charts/workload-webhook/icon.svg") and os.path.exists(os.path.join(CHART, "icon.svg"))
    assert meta["maintainers"] and all(m["name"] for m in meta["maintainers"])
    proc = subprocess.run([os.path.join(bin_dir, "helm"), "lint", "--strict", CHART], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "icon is recommended" not in proc.stdout, proc.stdout


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


def test_readme_step_1_installs_the_released_chart_and_keeps_the_build_it_yourself_path():
    version = project_version()
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    quick = readme[readme.index("## Quick start"):readme.index("**2.")]
    assert (f"helm install workload-webhook oci://ghcr.io/OWNER/charts/workload-webhook --version {version}"
            in quick), quick
    assert "docker build" not in quick
    with open(os.path.join(REPO, "docs", "helm.md"), encoding="utf-8") as f:
        helm_md = f.read()
    assert "docker build" in helm_md and "air-gapped" in helm_md      # building it yourself, documented
    # The same placeholder owner in the README, the chart and (by the repository's owner) the workflow.
    assert set(re.findall(r"ghcr\.io/([A-Za-z0-9-]+)/charts", readme)) == {"OWNER"}
    assert set(re.findall(r"github\.com/([A-Za-z0-9-]+)/workload-webhook", str(chart_meta()))) == {"OWNER"}
