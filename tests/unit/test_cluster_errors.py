"""A cluster that cannot be asked is one line on stderr and exit 2, for every
command that talks to one: a real closed port on loopback (connection
refused), a kubeconfig that is not there, no configuration at all. The CLI
runs as a process, as an operator runs it (a traceback would show here)."""
import json
import os
import socket
import subprocess
import sys

import pytest

from tests.server.harness import REPO
from tests.unit.helpers import kubeconfig_to


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: connecting is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(*args: str, env: dict | None = None, home=None, timeout: float = 60) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")}
    base["HOME"] = str(home)                       # no ~/.kube/config
    return subprocess.run([sys.executable, "-m", "webhook", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**base, **(env or {})})


def _one_line(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.fixture
def refused(tmp_path):
    port = _closed_port()
    kc = tmp_path / "kubeconfig"
    kc.write_text(kubeconfig_to(f"https://127.0.0.1:{port}"))
    return str(kc), f"https://127.0.0.1:{port}"


@pytest.mark.parametrize("command", [["audit"], ["explain", "job/train", "-n", "ml"], ["check", "--timeout", "2"]])
def test_an_unreachable_api_server_is_one_line_naming_it_and_exit_2(command, refused, tmp_path):
    kubeconfig, url = refused
    proc = _run(*command, "--kubeconfig", kubeconfig, home=tmp_path)
    line = _one_line(proc)
    assert proc.returncode == 2, proc.stderr         # audit: 1 means violations, so 2 must be distinct
    assert url in line and "connection refused" in line


@pytest.mark.parametrize("command", [["audit"], ["explain", "job/train"], ["check", "--timeout", "1"]])
def test_no_cluster_configuration_is_one_line_and_exit_2(command, tmp_path):
    proc = _run(*command, home=tmp_path)
    assert proc.returncode == 2 and "no cluster" in _one_line(proc)
    proc = _run(*command, "--kubeconfig", str(tmp_path / "absent"), home=tmp_path)
    assert proc.returncode == 2 and f"--kubeconfig {tmp_path / 'absent'}: no such file" in _one_line(proc)


def test_a_KUBECONFIG_list_uses_the_first_files_context_as_kubectl_does(tmp_path):
    first, second = _closed_port(), _closed_port()
    paths = []
    for name, port in (("first", first), ("second", second)):
        doc = json.loads(kubeconfig_to(f"https://127.0.0.1:{port}"))
        for section in ("clusters", "contexts", "users"):
            doc[section][0]["name"] = name
        doc["contexts"][0]["context"] = {"cluster": name, "user": name}
        doc["current-context"] = name
        (tmp_path / name).write_text(json.dumps(doc))
        paths.append(str(tmp_path / name))
    proc = _run("explain", "job/train", env={"KUBECONFIG": os.pathsep.join(paths)}, home=tmp_path)
    line = _one_line(proc)
    assert proc.returncode == 2 and f"https://127.0.0.1:{first}" in line, line
    proc = _run("audit", env={"KUBECONFIG": os.pathsep.join(paths)}, home=tmp_path)
    assert proc.returncode == 2 and f"https://127.0.0.1:{first}" in _one_line(proc)


def test_serve_with_a_cluster_it_cannot_use_stops_at_once_with_one_line(tmp_path):
    """Before, the workers failed on it one after the other, for ever."""
    certs = str(tmp_path / "certs")
    proc = _run("serve", "--cert-dir", certs, "--port", str(_closed_port()), "--kubeconfig",
                str(tmp_path / "absent"), home=tmp_path)
    assert proc.returncode == 2 and "--kubeconfig" in _one_line(proc) and "absent" in proc.stderr
    proc = _run("serve", "--cert-dir", certs, "--port", str(_closed_port()), "--cluster", "in-cluster", home=tmp_path)
    assert proc.returncode == 2 and "in-cluster: not in a Pod" in _one_line(proc)
