"""The CLI against the real API server, as an operator's CI runner meets it:
credentials refused (a bad token: 401), a user without RBAC (403), a server
certificate the kubeconfig's CA does not sign (TLS): one line naming the
server, exit 2. And the order credentials are found in, with a real
ServiceAccount token mounted where the kubelet mounts it (a private mount
namespace: `unshare --mount`), beside a KUBECONFIG: the KUBECONFIG's cluster
is the one audited, as kubectl would; with no kubeconfig at all, the
ServiceAccount is used."""
import base64
import os
import subprocess
import sys

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from tests.server.harness import REPO
from webhook.certificates.files import make_ca

SA_MOUNT = "/run/secrets/kubernetes.io/serviceaccount"     # /var/run is /run


def _kubeconfig(path, server: str, ca_pem: bytes, user: dict) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
        "clusters": [{"name": "e2e", "cluster": {"server": server,
                                                 "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "u", "namespace": "default"}}]}))
    return str(path)


def _env(home, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")}
    return {**env, "HOME": str(home), **extra}


def _cli(*args: str, env: dict, prefix: tuple = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-m", "webhook", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=env)


def _one_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def wrong(cluster, tmp_path_factory):
    """Kubeconfigs the real API server turns down, by what it says."""
    d = tmp_path_factory.mktemp("wrong-credentials")
    other_ca, _ = make_ca("not the cluster's CA")
    cluster.add_user("cli-nobody")                  # a real client certificate, bound to no role
    return {
        "401 Unauthorized": _kubeconfig(d / "token", cluster.url, cluster.ca_pem, {"token": "not-a-valid-token"}),
        "403 Forbidden": cluster.kubeconfig("cli-nobody"),
        "TLS: certificate verify failed": _kubeconfig(d / "ca", cluster.url,
                                                      other_ca.public_bytes(serialization.Encoding.PEM),
                                                      {"token": "whatever"}),
    }


@pytest.mark.parametrize("refusal", ["401 Unauthorized", "403 Forbidden", "TLS: certificate verify failed"])
@pytest.mark.parametrize("command", [["audit"], ["explain", "job/train", "-n", "default"], ["check", "--timeout", "5"]])
def test_refused_credentials_are_one_line_naming_the_server_and_exit_2(cluster, wrong, refusal, command, tmp_path):
    proc = _cli(*command, "--kubeconfig", wrong[refusal], env=_env(tmp_path))
    line = _one_line(proc)
    assert proc.returncode == 2, proc.stderr
    assert cluster.url in line and refusal in line, line
    if refusal == "403 Forbidden":
        assert "cli-nobody" in line               # the API server's own words: who may not do what


@pytest.fixture(scope="module")
def service_account(cluster, kubectl, tmp_path_factory):
    """A real ServiceAccount token (TokenRequest) with the files the kubelet mounts; bound to no role."""
    kubectl("create", "serviceaccount", "cli-runner", "-n", "default")
    token = kubectl("create", "token", "cli-runner", "-n", "default", "--duration=1h").stdout.strip()
    d = tmp_path_factory.mktemp("serviceaccount")
    (d / "token").write_text(token)
    (d / "ca.crt").write_bytes(cluster.ca_pem)
    (d / "namespace").write_text("default")
    return str(d)


def _in_a_pod(service_account: str) -> tuple:
    """Run as in a Pod: the ServiceAccount at the kubelet's path, in a mount namespace of its own."""
    script = (f"mount -t tmpfs tmpfs /run && mkdir -p {os.path.dirname(SA_MOUNT)} && "
              f"ln -s {service_account} {SA_MOUNT} && exec \"$@\"")
    return ("unshare", "--mount", "sh", "-c", script, "sh")


def _pod_env(cluster, home, **extra) -> dict:
    return _env(home, KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(cluster.port), **extra)


def test_in_a_pod_a_given_KUBECONFIG_is_the_cluster_audited(cluster, service_account, tmp_path):
    """The runner Pod's ServiceAccount may read nothing; the KUBECONFIG's admin may."""
    proc = _cli("audit", env=_pod_env(cluster, tmp_path, KUBECONFIG=cluster.kubeconfig("admin")),
                prefix=_in_a_pod(service_account))
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stdout.startswith("RULE") and "object(s) audited" in proc.stderr


def test_in_a_pod_without_a_kubeconfig_the_service_account_is_used(cluster, service_account, tmp_path):
    for command in (["audit"], ["explain", "job/train"]):          # explain: the Pod's namespace by default
        proc = _cli(*command, env=_pod_env(cluster, tmp_path), prefix=_in_a_pod(service_account))
        line = _one_line(proc)
        assert proc.returncode == 2 and cluster.url in line, proc.stderr
        assert "403 Forbidden" in line and "system:serviceaccount:default:cli-runner" in line, line
