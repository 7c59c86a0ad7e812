"""An upgrade to a new release takes that release's image and defaults (docs/helm.md, upgrading).

Two packages of the chart, stamped as the release workflow stamps them (hack/stamp-release.py:
each names its own image digest) and the second also with another default changed
(shutdown.terminationGracePeriodSeconds), are installed and upgraded with the real helm against
the real API server (no node needed: helm stores the release and the API server the
Deployment). `--reuse-values` renders the new chart with the old chart's defaults (helm
v3.22, pkg/action/upgrade.go reuseValues: `chart.Values = oldVals`), so it keeps the old image:
that is why the docs never use it for an upgrade. `--reset-then-reuse-values`, and a values
file given again, take the new image and the new default and keep what the user set."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

from tests.e2e.test_chart import CHART, helm
from tests.server.harness import REPO

STAMP = os.path.join(REPO, "hack", "stamp-release.py")
RELEASE, NS = "wwup", "ww-upgrade"
FULLNAME = f"{RELEASE}-workload-webhook"
OLD = {"version": "9.0.0", "digest": "sha256:" + "1" * 64, "grace": 40}
NEW = {"version": "9.1.0", "digest": "sha256:" + "2" * 64, "grace": 55}
USER_VALUES = {"replicaCount": 1, "commonLabels": {"team": "ml"}}


def package(helm_bin: str, tmp_path, release: dict) -> str:
    """The chart as a release would package it, at release["version"], its image by digest."""
    work = tmp_path / release["version"]
    chart = work / "workload-webhook"
    shutil.copytree(CHART, chart)
    proc = subprocess.run([STAMP, str(chart), "--source-url", "https://github.com/example/workload-webhook",
                           "--ref", f"v{release['version']}", "--registry", "ghcr.io",
                           "--repository", "example/workload-webhook", "--digest", release["digest"]],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    values = (chart / "values.yaml").read_text()
    line = "  terminationGracePeriodSeconds: 40\n"
    assert values.count(line) == 1, "values.yaml's shutdown.terminationGracePeriodSeconds moved"
    (chart / "values.yaml").write_text(values.replace(line, f"  terminationGracePeriodSeconds: {release['grace']}\n"))
    proc = subprocess.run([helm_bin, "package", str(chart), "-d", str(work), "--version", release["version"],
                           "--app-version", release["version"]], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return str(work / f"workload-webhook-{release['version']}.tgz")


def deployed(cluster, kubectl) -> dict:
    """What the API server stores and helm computed: the image, the grace period, the replicas,
    the user's label; and helm's view of the values."""
    dep = kubectl.get("deployment", FULLNAME, NS)
    pod = dep["spec"]["template"]["spec"]
    values = json.loads(helm(cluster, "get", "values", RELEASE, "-n", NS, "--all", "-o", "json").stdout)
    return {"image": pod["containers"][0]["image"], "grace": pod["terminationGracePeriodSeconds"],
            "replicas": dep["spec"]["replicas"], "team": dep["metadata"]["labels"].get("team"),
            "values": (values["image"]["digest"], values["shutdown"]["terminationGracePeriodSeconds"],
                       values["replicaCount"])}


def expected(release: dict) -> dict:
    return {"image": f"ghcr.io/example/workload-webhook:{release['version']}@{release['digest']}",
            "grace": release["grace"], "replicas": 1, "team": "ml", "values": (release["digest"], release["grace"], 1)}


@pytest.fixture
def packages(cluster, tmp_path):
    return package(cluster.helm, tmp_path, OLD), package(cluster.helm, tmp_path, NEW)


@pytest.fixture
def release(cluster, kubectl, packages, tmp_path):
    user = tmp_path / "values.yaml"
    user.write_text(yaml.safe_dump(USER_VALUES))
    helm(cluster, "install", RELEASE, packages[0], "-n", NS, "--create-namespace", "-f", str(user))
    yield str(user)
    helm(cluster, "uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "60s", check=False)


def test_reuse_values_keeps_the_old_image_and_defaults(cluster, kubectl, packages, release):
    old = deployed(cluster, kubectl)
    assert old == expected(OLD)
    helm(cluster, "upgrade", RELEASE, packages[1], "-n", NS, "--reuse-values")
    after = deployed(cluster, kubectl)
    # The new chart (its appVersion in the tag), rendered with the old chart's values: the old digest.
    assert after["image"] == f"ghcr.io/example/workload-webhook:{NEW['version']}@{OLD['digest']}"
    assert (after["grace"], after["values"]) == (OLD["grace"], (OLD["digest"], OLD["grace"], 1))
    chart = json.loads(helm(cluster, "list", "-n", NS, "-o", "json").stdout)[0]["chart"]
    assert chart == f"workload-webhook-{NEW['version']}"       # helm says it upgraded


@pytest.mark.parametrize("how", ["--reset-then-reuse-values", "-f values.yaml"])
def test_the_documented_upgrade_takes_the_new_image_and_defaults_and_keeps_the_users(cluster, kubectl, packages,
                                                                                  release, how):
    flags = ["--reset-then-reuse-values"] if how.startswith("--") else ["-f", release]
    helm(cluster, "upgrade", RELEASE, packages[1], "-n", NS, *flags)
    assert deployed(cluster, kubectl) == expected(NEW)
    # And back: a rollback restores the old release's image with its defaults.
    helm(cluster, "rollback", RELEASE, "1", "-n", NS)
    assert deployed(cluster, kubectl) == expected(OLD)
