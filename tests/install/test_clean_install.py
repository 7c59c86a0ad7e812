"""The install path users take: the wheel, built from this tree, installed into a
new virtualenv without extras and pinned by constraints.txt, serves: `/readyz`
answers 200 over TLS with the development certificates `serve` generates.
Nothing of the test environment (pytest, hypothesis, their dependencies) is there
to hide a missing runtime dependency."""
from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
import sys
import time
import tomllib
import urllib.request

import pytest

from tests.e2e.controlplane import free_ports
from tests.server.harness import REPO

pytestmark = pytest.mark.install


def _pins(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            out[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    return out


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("clean-install")
    wheels = root / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", REPO, "--no-deps", "-q", "-w", str(wheels)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=120)
    pip = [str(root / "venv" / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    proc = subprocess.run([*pip, "install", "-q", "-c", os.path.join(REPO, "constraints.txt"),
                           str(next(wheels.glob("*.whl")))], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def test_the_constraints_pin_exactly_what_a_clean_install_holds(venv):
    frozen = subprocess.run([str(venv / "venv" / "bin" / "python"), "-m", "pip", "freeze", "--exclude",
                             "workload-webhook"], capture_output=True, text=True, check=True).stdout
    with open(os.path.join(REPO, "constraints.txt")) as f:
        pinned = _pins(f.read())
    installed = _pins(frozen)
    assert installed == pinned, (f"constraints.txt is stale: missing {sorted(set(installed) - set(pinned))}, "
                                 f"unused {sorted(set(pinned) - set(installed))}, differing "
                                 f"{sorted(k for k in installed.keys() & pinned.keys() if installed[k] != pinned[k])}")
    assert "pytest" not in installed and "hypothesis" not in installed


def test_version_is_the_packages(venv):
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    out = subprocess.run([str(venv / "venv" / "bin" / "workload-webhook"), "--version"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"workload-webhook {version}"


def test_a_clean_install_serves_and_is_ready(venv):
    cert_dir = venv / "certs"
    port = free_ports(1)[0]
    log = open(venv / "serve.log", "wb")
    proc = subprocess.Popen([str(venv / "venv" / "bin" / "workload-webhook"), "serve", "--cluster", "disabled",
                             "--cert-dir", str(cert_dir), "--port", str(port), "--workers", "1"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=str(venv), env={"PATH": "/usr/bin:/bin"})
    answer = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                ctx = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=5) as r:
                    answer = (r.status, json.loads(r.read()))
                    break
            except (OSError, ValueError):
                time.sleep(0.3)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    output = (venv / "serve.log").read_text(errors="replace")
    assert answer is not None, f"serve never answered /readyz (exit {proc.returncode}):\n{output[-3000:]}"
    assert answer[0] == 200 and answer[1]["ready"] is True, answer
