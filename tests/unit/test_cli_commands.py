"""The CLI commands beyond validate/mutate: certs, webhook-configs and the
exit codes of serve (before it starts anything)."""
import os
import subprocess
import sys

import yaml
from cryptography import x509

from tests.server.harness import REPO
from webhook.cli import main


def test_certs_generate_then_inspect_and_rotate_with_the_same_ca(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["certs", "generate", "--out", str(out), "--dns", "hook.example", "--ip", "127.0.0.2"]) == 0
    assert capsys.readouterr().out.strip() == str(out / "ca.crt")
    assert main(["certs", "inspect", str(out / "tls.crt")]) == 0
    text = capsys.readouterr().out
    assert "hook.example" in text and "127.0.0.2" in text
    first = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    again = tmp_path / "d"
    assert main(["certs", "generate", "--out", str(again), "--ca-dir", str(out)]) == 0
    second = x509.load_pem_x509_certificate((again / "tls.crt").read_bytes())
    assert second.issuer == first.issuer and second.serial_number != first.serial_number
    assert not (again / "ca.key").exists()         # the CA stays where it is


def test_certs_inspect_of_a_broken_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "x.crt"
    bad.write_text("not a certificate")
    assert main(["certs", "inspect", str(bad)]) == 2
    assert "x.crt" in capsys.readouterr().err


def _real_ca(tmp_path):
    assert main(["certs", "generate", "--out", str(tmp_path / "pki")]) == 0
    return tmp_path / "pki" / "ca.crt"


def test_webhook_configs_for_a_service_and_for_a_url(tmp_path, capsys):
    ca = _real_ca(tmp_path)
    capsys.readouterr()
    assert main(["webhook-configs", "--ca-bundle", str(ca), "--service", "ww/workload-webhook",
                 "--config", "examples/config.yaml", "--pod-failure-policy", "Ignore"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    kinds = [d["kind"] for d in docs]
    assert kinds[:2] == ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"]
    pod_hook = next(h for h in docs[1]["webhooks"] if h["name"].startswith("pods."))
    assert pod_hook["failurePolicy"] == "Ignore"
    assert pod_hook["clientConfig"]["service"] == {"namespace": "ww", "name": "workload-webhook",
                                                   "path": "/mutate", "port": 443}
    assert main(["webhook-configs", "--ca-bundle", str(ca), "--url", "https://127.0.0.1:9443"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs[0]["webhooks"][0]["clientConfig"]["url"] == "https://127.0.0.1:9443/validate"


def test_webhook_configs_usage_errors_exit_2(tmp_path, capsys):
    assert main(["webhook-configs", "--ca-bundle", str(tmp_path / "missing.crt"), "--url", "https://x"]) == 2
    ca = _real_ca(tmp_path)
    assert main(["webhook-configs", "--ca-bundle", str(ca), "--service", "no-slash"]) == 2
    assert "NAMESPACE/NAME" in capsys.readouterr().err


def _serve(*args, env=None):
    return subprocess.run([sys.executable, "-m", "webhook", "serve", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env={**os.environ, **(env or {})})


def test_serve_exits_2_on_a_bad_config_file(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text("server: {port: 0}\n")
    proc = _serve("--config", str(bad), "--cert-dir", str(tmp_path / "certs"))
    assert proc.returncode == 2 and "server.port" in proc.stderr


def test_serve_exits_2_on_a_bad_environment_value(tmp_path):
    proc = _serve("--cert-dir", str(tmp_path / "certs"), env={"WW_WORKERS": "many"})
    assert proc.returncode == 2 and "WW_WORKERS" in proc.stderr


def test_serve_exits_2_on_a_bad_flag_value(tmp_path):
    proc = _serve("--cert-dir", str(tmp_path / "certs"), "--idle-timeout", "0")
    assert proc.returncode == 2 and "idleTimeoutSeconds" in proc.stderr
