"""The published JSON Schemas have one home, the top-level `schemas/`; the wheel
carries them as webhook.schemas.published. Built here with pip (setuptools
from PyPI in an isolated build), then compared file by file."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import tomllib
import zipfile

from tests.server.harness import REPO
from webhook.schemas import all_schemas


def test_the_package_list_matches_the_tree():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = {os.path.relpath(d, REPO).replace(os.sep, ".") for d, _, files in os.walk(os.path.join(REPO, "webhook"))
             if "__init__.py" in files}
    assert listed == found | {"webhook.schemas.published"}


def test_no_schema_is_kept_twice_in_the_repository():
    copies = glob.glob(os.path.join(REPO, "webhook", "**", "*.schema.json"), recursive=True)
    assert copies == []


def test_the_wheel_carries_exactly_the_schemas_folder(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", REPO, "--no-deps", "-q", "-w", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheel = zipfile.ZipFile(next(tmp_path.glob("*.whl")))
    prefix = "webhook/schemas/published/"
    packaged = {n[len(prefix):]: wheel.read(n) for n in wheel.namelist() if n.startswith(prefix) and n.endswith(".json")}
    folder = {}
    for path in glob.glob(os.path.join(REPO, "schemas", "**", "*.json"), recursive=True):
        with open(path, "rb") as f:
            folder[os.path.relpath(path, os.path.join(REPO, "schemas")).replace(os.sep, "/")] = f.read()
    assert packaged == folder and len(folder) == len(all_schemas()) >= 10
    assert any(n.startswith("webhook/profiles/") and n.endswith("jobset.yaml") for n in wheel.namelist())
