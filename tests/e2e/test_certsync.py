"""Certificate sync (chart `self` mode) against the real API server: two
replicas racing to create the Secret (the loser gets a real 409 and adopts the
winner's certificates), and a service that may read but not create its
Secret (a real 403, answered with what to do)."""
import os
import time
import uuid

import pytest
import yaml

from webhook.cluster.cache import api_client
from webhook.certificates.secret import CertSync


def _sync(cluster, user, namespace, secret, cert_dir):
    return CertSync(api_client("kubeconfig", cluster.kubeconfig(user)), namespace, secret,
                    f"no-such-webhook-{uuid.uuid4().hex[:6]}", str(cert_dir))


def test_two_replicas_race_and_the_loser_adopts_the_winner(cluster, namespace, tmp_path):
    winner = _sync(cluster, "admin", namespace, "ww-tls", tmp_path / "a")
    loser = _sync(cluster, "admin", namespace, "ww-tls", tmp_path / "b")
    assert winner.step() == "created"
    # The loser read the Secret just before the winner created it: its first read is stale.
    real_read, reads = loser._read, []

    def stale_then_real():
        reads.append(1)
        return None if len(reads) == 1 else real_read()
    loser._read = stale_then_real
    assert loser.step() is None                       # its create got 409; it re-read and changed nothing
    assert len(reads) == 2
    for name in ("tls.crt", "tls.key", "ca.crt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_a_missing_secret_it_may_not_create_is_a_clear_error(cluster, kubectl, namespace, tmp_path):
    user = f"reader-{uuid.uuid4().hex[:6]}"
    cluster.add_user(user)
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": user, "namespace": namespace},
         "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": user, "namespace": namespace},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
         "subjects": [{"kind": "User", "name": user}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": user},
         "rules": [{"apiGroups": ["admissionregistration.k8s.io"],
                    "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
                    "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": user},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
         "subjects": [{"kind": "User", "name": user}]},
    ]))
    deadline = time.monotonic() + 30             # RBAC reaches the authorizer through its own cache
    while time.monotonic() < deadline:
        if kubectl("auth", "can-i", "get", "secrets", "-n", namespace, f"--as={user}", check=False).returncode == 0:
            break
        time.sleep(0.2)
    sync = _sync(cluster, user, namespace, "ww-tls", tmp_path)
    with pytest.raises(RuntimeError, match="is missing and this service may not create it; `helm upgrade` restores it"):
        sync.step()
    assert not (tmp_path / "tls.crt").exists()


def test_ADM_7_healthz_fails_over_https_when_the_sync_loop_stalls(cluster, namespace, tmp_path):
    """The served /healthz follows the master's sync loop: a heartbeat older than
    three intervals plus a minute (a stalled loop) makes it 503, so the kubelet
    restarts the pod."""
    from tests.server.harness import Server
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"certificates": {
        "mode": "secret", "secret": f"{namespace}/ww-heartbeat", "webhookConfiguration": "no-such-webhook",
        "checkIntervalSeconds": 30, "graceSeconds": 90}}))
    workdir = tmp_path / "serve"
    workdir.mkdir()
    with Server(str(workdir), config=str(config),
                extra=["--cluster", "kubeconfig", "--kubeconfig", cluster.kubeconfig("admin")]) as server:
        assert server.get("/healthz")[0] == 200
        heartbeat = os.path.join(server.cert_dir, ".sync-heartbeat")
        assert os.path.exists(heartbeat)
        an_hour_ago = time.time() - 3600
        os.utime(heartbeat, (an_hour_ago, an_hour_ago))
        status, _, body = server.get("/healthz")
        assert status == 503 and b"certificate sync has stalled" in body
