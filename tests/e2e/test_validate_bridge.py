"""`validate` offline says what the real API server says for Coscheduling and Volcano
PodGroups with the bridge on: the projects' published CRDs (../shared/crds) served by
the session's kube-apiserver, a `workload-webhook serve` with the same bridge config
registered for them as `webhook-configs` registers it (the bridge's validating webhook),
and kubectl's create warnings compared, line for line, with `validate -o json` on the
very files kubectl created. The objects being created at all shows the CRDs accept them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
import yaml

from tests.server.harness import REPO, Server
from tests.unit.test_validate_bridge import BRIDGE, CRD_FILES, FOREIGN, shared_crd
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations

NAME = "ww-validate-bridge"


def _bridge_registration(cfg, ca: bytes, port: int) -> dict:
    """The validating configuration's bridge webhook only: nothing else of this cluster is sent to it."""
    [validating] = [c for c in configurations(cfg, Endpoint(ca, url=f"https://127.0.0.1:{port}"), name=NAME,
                                              namespace=NAME) if c["kind"] == "ValidatingWebhookConfiguration"]
    validating["webhooks"] = [w for w in validating["webhooks"] if w["name"].startswith("bridge.")]
    assert len(validating["webhooks"]) == 1
    return validating


def _warnings(stderr: str) -> list[str]:
    return [line[len("Warning: "):] for line in stderr.splitlines() if line.startswith("Warning: ")]


@pytest.fixture(scope="module")
def bridged(cluster, kubectl, tmp_path_factory):
    work = tmp_path_factory.mktemp("validate-bridge")
    for crd in CRD_FILES.values():
        kubectl("apply", "--server-side", "-f", shared_crd(crd))
    kubectl("wait", "--for=condition=Established", "crd/podgroups.scheduling.x-k8s.io",
            "crd/podgroups.scheduling.volcano.sh", "--timeout=60s")
    cfg_file = work / "bridge.yaml"
    cfg_file.write_text(yaml.safe_dump(BRIDGE))
    server = Server(str(work), config=str(cfg_file), workers=1, extra=["--cluster", "disabled"]).start()
    try:
        with open(os.path.join(server.cert_dir, "ca.crt"), "rb") as f:
            kubectl.apply(_bridge_registration(config_mod.load(str(cfg_file)), f.read(), server.port))
        ns = f"vb-{uuid.uuid4().hex[:6]}"
        kubectl("create", "namespace", ns)
        # The registration is picked up asynchronously, and the bridge's webhook ignores failures:
        # wait until a create is answered with its warning.
        probe = {**FOREIGN[0], "metadata": {"name": "probe", "namespace": ns}}
        deadline = time.monotonic() + 60
        while not _warnings(kubectl.create(probe, "--dry-run=server").stderr):
            assert time.monotonic() < deadline, f"the API server never called the bridge's webhook\n{server.log()}"
            time.sleep(0.3)
        files = {}
        for obj in FOREIGN:
            name = obj["metadata"]["name"]
            files[name] = work / f"{name}.yaml"
            files[name].write_text(yaml.safe_dump({**obj, "metadata": {**obj["metadata"], "namespace": ns}}))
        yield cfg_file, files
    finally:
        kubectl("delete", "validatingwebhookconfiguration", NAME, "--ignore-not-found", check=False)
        server.stop()


def test_kubectl_create_and_validate_offline_say_the_same_warnings(bridged, kubectl):
    cfg_file, files = bridged
    said_by_server, said_offline = {}, {}
    for name, path in files.items():
        proc = kubectl("create", "-f", str(path))            # accepted by the published CRD: it is created
        said_by_server[name] = _warnings(proc.stderr)
        offline = subprocess.run([sys.executable, "-m", "webhook", "validate", "-f", str(path), "--config",
                                  str(cfg_file), "-o", "json"], capture_output=True, text=True, cwd=REPO, timeout=60)
        assert offline.returncode == 0, offline.stderr
        [record] = json.loads(offline.stdout)
        said_offline[name] = record["warnings"]
        assert record["status"] == ("warned" if record["warnings"] else "valid")
    assert said_offline == said_by_server
    assert sum(map(len, said_by_server.values())) >= 7 and said_by_server["fine"] == []
    assert "spec.queue: not mirrored: no queues: kube-scheduler orders groups by priority (BRG-1)" \
        in said_by_server["queued"]


def test_fail_on_warn_fails_offline_what_the_server_warns_about(bridged):
    cfg_file, files = bridged
    proc = subprocess.run([sys.executable, "-m", "webhook", "validate", "-f", str(files["queued"]),
                           str(files["fine"]), "--config", str(cfg_file), "--fail-on", "warn"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 1 and "exit 1 because of 1 warned (--fail-on warn)" in proc.stderr, proc.stderr
