"""The image the Dockerfile builds (issue 30, point 5), read from the archive hack/build-images.sh
exported (built by the setup, as the real-node tests run it): at most 150 MB unpacked, one tree
FROM scratch with the interpreter's packages and the service's venv and nothing else (no shell,
package manager, pip, setuptools or caches), every module byte-compiled, the user 65532. That it
serves is test_chart_node.py's part: the chart runs this image on a real kubelet."""
from __future__ import annotations

import json
import os
import tarfile

import pytest
import yaml

from tests.server.harness import REPO

LIMIT_BYTES = 150_000_000
VENV = "opt/workload-webhook"
SITE = f"{VENV}/lib/python3.11/site-packages"


@pytest.fixture(scope="module")
def image(images) -> dict:
    with tarfile.open(images["WEBHOOK_ARCHIVE"]) as archive:
        manifest = json.load(archive.extractfile("manifest.json"))[0]
        config = json.load(archive.extractfile(manifest["Config"]))
        members, passwd, size = {}, b"", 0
        for layer in manifest["Layers"]:
            size += archive.getmember(layer).size
            with tarfile.open(fileobj=archive.extractfile(layer)) as t:
                for m in t.getmembers():
                    members[m.name.removeprefix("./")] = m
                    if m.name.removeprefix("./") == "etc/passwd":
                        passwd = t.extractfile(m).read()
    return {"config": config, "files": members, "size": size, "passwd": passwd.splitlines(),
            "tags": manifest.get("RepoTags") or []}


def test_the_image_is_at_most_150_mb(image):
    assert image["size"] <= LIMIT_BYTES, f"{image['size'] / 1e6:.1f} MB"


def test_it_holds_the_interpreter_and_the_venv_and_nothing_to_install_or_run_a_shell_with(image):
    files = image["files"]
    for absent in ("bin/sh", "usr/bin/sh", "usr/bin/dash", "usr/bin/bash", "usr/bin/apt", "usr/bin/apt-get",
                   "usr/bin/dpkg", "usr/bin/perl", f"{VENV}/bin/pip", f"{VENV}/bin/pip3"):
        assert absent not in files, absent
    assert not [n for n in files if n.startswith((f"{SITE}/pip/", f"{SITE}/setuptools/", f"{SITE}/wheel/",
                                                  f"{SITE}/kubernetes/aio/", f"{SITE}/aiohttp/"))]
    assert not [n for n in files if n.startswith(("var/lib/apt", "var/lib/dpkg", "var/cache", "root/.cache",
                                                  "usr/share/doc/", "usr/share/man/"))]
    assert not [n for n in files if n.startswith(("etc/pip.conf", "etc/apt"))]
    for present in ("usr/bin/python3.11", f"{VENV}/bin/workload-webhook", f"{VENV}/pyvenv.cfg",
                    "etc/ssl/certs/ca-certificates.crt", "etc/passwd"):
        assert present in files, present
    assert files["tmp"].isdir() and files["tmp"].mode & 0o1777 == 0o1777


def test_every_module_is_byte_compiled_the_generated_client_as_bytecode_alone(image):
    files = image["files"]
    ours = [n for n in files if n.startswith(f"{SITE}/webhook/") and n.endswith(".py")]
    assert len(ours) > 50
    for source in ours:
        folder, _, module = source.rpartition("/")
        assert f"{folder}/__pycache__/{module[:-3]}.cpython-311.pyc" in files, source
    generated = [n for n in files if n.startswith(f"{SITE}/kubernetes/client/models/")]
    assert generated and not [n for n in generated if n.endswith(".py")]
    assert f"{SITE}/kubernetes/client/models/v1_pod.pyc" in files


def test_it_runs_the_service_as_65532(image):
    config = image["config"]["config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == [f"/{VENV}/bin/workload-webhook"]
    assert config["Cmd"] == ["serve", "--config", "/etc/workload-webhook/config.yaml"]
    assert f"PATH=/{VENV}/bin:/usr/bin" in config["Env"]
    assert [line.split(b":")[:4] for line in image["passwd"]] == [[b"root", b"x", b"0", b"0"],
                                                                   [b"nonroot", b"x", b"65532", b"65532"]]
    with open(os.path.join(REPO, "charts", "workload-webhook", "Chart.yaml"), encoding="utf-8") as f:
        app_version = yaml.safe_load(f)["appVersion"]
    assert f"docker.io/library/workload-webhook:{app_version}" in image["tags"]      # the name the chart asks for
