"""Development certificates: a CA and a serving certificate signed by it
(cryptography), plus the loader gunicorn uses so certificates replaced on disk
are picked up by new connections without a restart."""
from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import tempfile
import threading
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT, CA_KEY, TLS_CERT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"
DEFAULT_DNS = ("localhost", "workload-webhook", "workload-webhook.workload-webhook",
               "workload-webhook.workload-webhook.svc", "workload-webhook.workload-webhook.svc.cluster.local")
DEFAULT_IPS = ("127.0.0.1", "::1")
# TLS 1.2+ with forward-secret AEAD suites only (TLS 1.3 suites are always on).
CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


@dataclass(frozen=True)
class Paths:
    ca_cert: str
    ca_key: str
    cert: str
    key: str

    @classmethod
    def in_dir(cls, d: str) -> "Paths":
        return cls(*(os.path.join(d, n) for n in (CA_CERT, CA_KEY, TLS_CERT, TLS_KEY)))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def write_atomic(path: str, data: bytes, mode: int) -> None:
    """Atomic replace, so a reader never sees half a file."""
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def make_ca(common_name: str = "workload-webhook development CA", validity: dt.timedelta = dt.timedelta(days=365),
            now: dt.datetime | None = None):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = now or _now()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + validity)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


def make_serving(ca_cert, ca_key, dns_names=DEFAULT_DNS, ips=DEFAULT_IPS, validity: dt.timedelta = dt.timedelta(days=90),
                 now: dt.datetime | None = None):
    key = ec.generate_private_key(ec.SECP256R1())
    now = now or _now()
    sans = [x509.DNSName(n) for n in dns_names] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0] if dns_names else "webhook")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + validity)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


CA_VALIDITY, SERVING_VALIDITY = dt.timedelta(days=365), dt.timedelta(days=90)


def generate(out_dir: str, dns_names=DEFAULT_DNS, ips=DEFAULT_IPS, ca=None,
             ca_validity: dt.timedelta = CA_VALIDITY, validity: dt.timedelta = SERVING_VALIDITY) -> Paths:
    """Write ca.crt/ca.key (new unless `ca` is given) and tls.crt/tls.key into out_dir,
    replacing what is there (`certs generate` asks `replaced` first).
    The key is written before the certificate, so a reloader that sees the new
    certificate always finds its key."""
    os.makedirs(out_dir, exist_ok=True)
    paths = Paths.in_dir(out_dir)
    ca_cert, ca_key = ca or make_ca(validity=ca_validity)
    cert, key = make_serving(ca_cert, ca_key, tuple(dns_names), tuple(ips), validity=validity)
    if ca is None:
        write_atomic(paths.ca_key, pem_key(ca_key), 0o600)
        write_atomic(paths.ca_cert, ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    write_atomic(paths.key, pem_key(key), 0o600)
    write_atomic(paths.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return paths


def replaced(out_dir: str, new_ca: bool) -> list[str]:
    """The files `generate` would replace in out_dir (the CA's only when it makes a new one)."""
    paths = Paths.in_dir(out_dir)
    names = (paths.ca_cert, paths.ca_key, paths.cert, paths.key) if new_ca else (paths.cert, paths.key)
    return [p for p in names if os.path.lexists(p)]


def load_ca(d: str):
    paths = Paths.in_dir(d)
    with open(paths.ca_cert, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    with open(paths.ca_key, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    return cert, key


def ensure(cert_dir: str) -> tuple[Paths, bool]:
    """Use the certificates in cert_dir, generating a development set when there
    is no serving certificate. Returns (paths, generated)."""
    paths = Paths.in_dir(cert_dir)
    if os.path.exists(paths.cert) and os.path.exists(paths.key):
        return paths, False
    return generate(cert_dir), True


def stamp(path: str) -> tuple[int, int, int] | None:
    """What changes when a file is replaced or rewritten (None: it cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class ReloadingContext:
    """One server SSLContext per process, rebuilt when the certificate or key
    file changes on disk. A pair that does not load (half-written, mismatched)
    is ignored and the previous context stays in use, so no handshake fails
    during a rotation."""

    def __init__(self, cert: str, key: str, check_interval: float = 1.0):
        self.cert, self.key = cert, key
        self.check_interval = check_interval
        self._lock = threading.Lock()
        self._stamp = None
        self._checked = 0.0
        self._context = None
        self.reloads = 0
        self.get()
        if self._context is None:
            raise ssl.SSLError(f"cannot load certificate {cert} with key {key}")

    def _signature(self):
        a, b = stamp(self.cert), stamp(self.key)
        return None if a is None or b is None else a + b

    @staticmethod
    def build(cert: str, key: str) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(CIPHERS)
        ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION
        ctx.set_alpn_protocols(["http/1.1"])
        ctx.load_cert_chain(cert, key)
        return ctx

    def get(self) -> ssl.SSLContext:
        import time
        now = time.monotonic()
        if self._context is not None and now - self._checked < self.check_interval:
            return self._context
        with self._lock:
            self._checked = now
            sig = self._signature()
            if sig is not None and sig != self._stamp:
                try:
                    self._context = self.build(self.cert, self.key)
                    if self._stamp is not None:
                        self.reloads += 1
                    self._stamp = sig
                except (ssl.SSLError, OSError, ValueError):
                    pass  # keep serving with the previous pair
            return self._context
