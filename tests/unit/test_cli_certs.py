"""`certs` and `webhook-configs` are safe to hand to an operator: generate
never replaces a CA or key without --force and takes validity flags, inspect
shows what an operator checks (days left, key, fingerprint), and
webhook-configs publishes only PEM certificates, to https://HOST[:PORT] only."""
import datetime as dt
import hashlib

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from webhook.cli import main


def _generate(capsys, *args) -> int:
    code = main(["certs", "generate", *args])
    capsys.readouterr()
    return code


def _cert(path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_generate_refuses_to_replace_a_ca_or_a_serving_key_without_force(tmp_path, capsys):
    out = tmp_path / "pki"
    assert _generate(capsys, "--out", str(out)) == 0
    before = {n: (out / n).read_bytes() for n in ("ca.crt", "ca.key", "tls.crt", "tls.key")}
    assert main(["certs", "generate", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "ca.key" in err and "--force" in err and len(err.splitlines()) == 1
    assert {n: (out / n).read_bytes() for n in before} == before          # nothing was touched
    # signing in place with the same CA still replaces the serving key: --force too
    assert _generate(capsys, "--out", str(out), "--ca-dir", str(out)) == 2
    assert (out / "tls.key").read_bytes() == before["tls.key"]
    assert _generate(capsys, "--out", str(out), "--ca-dir", str(out), "--force") == 0
    assert (out / "ca.key").read_bytes() == before["ca.key"] and (out / "tls.key").read_bytes() != before["tls.key"]
    assert _generate(capsys, "--out", str(out), "--force") == 0
    assert (out / "ca.key").read_bytes() != before["ca.key"]


def test_generate_takes_validity_flags_and_keeps_the_leaf_within_its_ca(tmp_path, capsys):
    out = tmp_path / "pki"
    assert _generate(capsys, "--out", str(out), "--days", "7", "--ca-days", "30") == 0
    now = dt.datetime.now(dt.timezone.utc)
    ca, leaf = _cert(out / "ca.crt"), _cert(out / "tls.crt")
    assert abs((ca.not_valid_after_utc - now) - dt.timedelta(days=30)) < dt.timedelta(minutes=5)
    assert abs((leaf.not_valid_after_utc - now) - dt.timedelta(days=7)) < dt.timedelta(minutes=5)
    assert main(["certs", "generate", "--out", str(tmp_path / "b"), "--days", "400"]) == 2    # CA: 365 days
    assert "outlive its CA" in capsys.readouterr().err
    assert main(["certs", "generate", "--out", str(tmp_path / "c"), "--ca-dir", str(out), "--days", "31"]) == 2
    assert "outlive its CA" in capsys.readouterr().err
    assert main(["certs", "generate", "--out", str(tmp_path / "d"), "--ca-dir", str(out), "--ca-days", "5"]) == 2
    assert main(["certs", "generate", "--out", str(tmp_path / "e"), "--days", "0"]) == 2
    assert not any((tmp_path / d).exists() for d in "bcde")


def test_generate_with_a_missing_ca_or_a_bad_address_is_one_line(tmp_path, capsys):
    assert main(["certs", "generate", "--out", str(tmp_path / "o"), "--ca-dir", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert "ca.crt" in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert main(["certs", "generate", "--out", str(tmp_path / "o"), "--ip", "not-an-ip"]) == 2
    assert "not an IP address" in capsys.readouterr().err


def test_inspect_shows_days_left_key_type_and_the_sha256_fingerprint(tmp_path, capsys):
    out = tmp_path / "pki"
    assert _generate(capsys, "--out", str(out), "--days", "20") == 0
    assert main(["certs", "inspect", str(out / "tls.crt")]) == 0
    text = capsys.readouterr().out
    der = _cert(out / "tls.crt").public_bytes(serialization.Encoding.DER)
    assert f"SHA-256 fingerprint: {hashlib.sha256(der).digest().hex(':').upper()}" in text
    assert "(19 days left)" in text and "key: EC secp256r1 (256 bits)" in text and "CA: no" in text
    # an RSA CA, expired: said so; a bundle: every certificate
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "old")])
    past = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=10)
    old = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
           .serial_number(1).not_valid_before(past - dt.timedelta(days=30)).not_valid_after(past)
           .sign(key, hashes.SHA256()))
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes((out / "ca.crt").read_bytes() + old.public_bytes(serialization.Encoding.PEM))
    assert main(["certs", "inspect", str(bundle)]) == 0
    text = capsys.readouterr().out
    assert "CA: yes" in text and "key: RSA 2048" in text and "(expired 10 days ago)" in text


def test_inspect_of_a_key_says_so(tmp_path, capsys):
    out = tmp_path / "pki"
    assert _generate(capsys, "--out", str(out)) == 0
    assert main(["certs", "inspect", str(out / "ca.key")]) == 2
    assert "PRIVATE KEY block" in capsys.readouterr().err


@pytest.fixture
def pki(tmp_path, capsys):
    out = tmp_path / "pki"
    assert _generate(capsys, "--out", str(out)) == 0
    return out


def _bundle_refused(path, capsys) -> str:
    assert main(["webhook-configs", "--ca-bundle", str(path), "--url", "https://127.0.0.1:9443"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""                   # nothing published
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_webhook_configs_refuses_a_private_key_as_ca_bundle(pki, capsys):
    assert "private key" in _bundle_refused(pki / "ca.key", capsys)
    both = pki / "both.pem"
    both.write_bytes((pki / "ca.crt").read_bytes() + (pki / "ca.key").read_bytes())
    assert "private key" in _bundle_refused(both, capsys)


def test_webhook_configs_refuses_der_and_garbage(pki, tmp_path, capsys):
    der = tmp_path / "ca.der"
    der.write_bytes(_cert(pki / "ca.crt").public_bytes(serialization.Encoding.DER))
    assert "DER" in _bundle_refused(der, capsys)
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00\xffnot a certificate at all")
    assert "no PEM block" in _bundle_refused(junk, capsys)
    fake = tmp_path / "fake.pem"
    fake.write_bytes(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    assert "not an X.509 certificate" in _bundle_refused(fake, capsys)


def test_webhook_configs_publishes_a_bundle_of_certificates_as_it_is(pki, tmp_path, capsys):
    import base64
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(b"# the old and the new CA\n" + (pki / "ca.crt").read_bytes() + (pki / "tls.crt").read_bytes())
    assert main(["webhook-configs", "--ca-bundle", str(bundle), "--url", "https://127.0.0.1:9443/"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    hook = docs[0]["webhooks"][0]["clientConfig"]
    assert base64.b64decode(hook["caBundle"]) == bundle.read_bytes()
    assert hook["url"] == "https://127.0.0.1:9443/validate"


@pytest.mark.parametrize("url", ["http://127.0.0.1:9443", "https://hook.example/validate", "https://h:1/x/",
                                 "https://h:1?x=1", "https://h:1#f", "https://user:pw@h:1", "https://",
                                 "https://h:", "https://h:0", "https://h:70000", "hook.example:9443"])
def test_webhook_configs_takes_only_https_host_and_port(pki, url, capsys):
    assert main(["webhook-configs", "--ca-bundle", str(pki / "ca.crt"), "--url", url]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "https://HOST[:PORT]" in captured.err and len(captured.err.splitlines()) == 1


@pytest.mark.parametrize("url,called", [("https://hook.example", "https://hook.example/mutate"),
                                        ("https://[::1]:9443", "https://[::1]:9443/mutate"),
                                        ("https://10.1.2.3:443/", "https://10.1.2.3:443/mutate")])
def test_webhook_configs_host_and_port_forms(pki, url, called, capsys):
    assert main(["webhook-configs", "--ca-bundle", str(pki / "ca.crt"), "--url", url]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs[1]["webhooks"][0]["clientConfig"]["url"] == called
