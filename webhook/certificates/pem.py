"""Certificates a user hands to the CLI: the CA bundle `webhook-configs`
publishes as caBundle (PEM CERTIFICATE blocks only: a private key there would
be published to everyone who can read the configuration), and what
`certs inspect` shows of a certificate file."""
from __future__ import annotations

import datetime as dt
import re

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa

# A PEM block as RFC 7468 frames it; text between blocks is allowed (openssl writes some).
_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.S)
_BEGIN = re.compile(rb"-----BEGIN ([A-Z0-9 ]*)-----")
MAX_BYTES = 1 << 20


class BundleError(ValueError):
    """The file is not a bundle of PEM certificates (one line why)."""


def certificates(data: bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM file; BundleError unless it holds only CERTIFICATE blocks."""
    begun = _BEGIN.findall(data)
    if not begun:
        try:
            x509.load_der_x509_certificate(data)
        except ValueError:
            raise BundleError("holds no PEM block (-----BEGIN CERTIFICATE-----)") from None
        raise BundleError("is a DER (binary) certificate: convert it to PEM (openssl x509 -inform der)")
    other = sorted({b.decode() for b in begun if b != b"CERTIFICATE"})
    if other:
        raise BundleError(f"holds a {other[0]} block, not only CERTIFICATE blocks")
    blocks = _BLOCK.findall(data)
    if len(blocks) != len(begun):
        raise BundleError(f"has {len(begun) - len(blocks)} of {len(begun)} CERTIFICATE blocks not closed")
    out = []
    for i, (_, body) in enumerate(blocks, 1):
        try:
            out.append(x509.load_pem_x509_certificate(b"-----BEGIN CERTIFICATE-----\n" + body
                                                      + b"-----END CERTIFICATE-----\n"))
        except ValueError:          # cryptography's ASN.1 parser error: nothing a reader can use
            raise BundleError(f"has a CERTIFICATE block ({i} of {len(blocks)}) that is not an X.509 "
                              "certificate") from None
    return out


def read(path: str) -> bytes:
    """A certificate file's bytes, at most MAX_BYTES (BundleError beyond)."""
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise BundleError(f"is larger than {MAX_BYTES >> 20} MiB: not a certificate file")
    return data


def read_bundle(path: str) -> bytes:
    """The file's bytes, once they hold PEM certificates only (OSError, BundleError)."""
    data = read(path)
    try:
        certificates(data)
    except BundleError as exc:
        secret = b"PRIVATE KEY-----" in data
        raise BundleError(f"a caBundle is PEM certificates only: this file {exc}"
                          + (" (it would publish a private key)" if secret else "")) from None
    return data


def key_type(cert: x509.Certificate) -> str:
    key = cert.public_key()
    if isinstance(key, rsa.RSAPublicKey):
        return f"RSA {key.key_size}"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return f"EC {key.curve.name} ({key.curve.key_size} bits)"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "Ed25519"
    if isinstance(key, ed448.Ed448PublicKey):
        return "Ed448"
    if isinstance(key, dsa.DSAPublicKey):
        return f"DSA {key.key_size}"
    return type(key).__name__


def _left(not_after: dt.datetime, now: dt.datetime) -> str:
    seconds = (not_after - now).total_seconds()
    days = int(abs(seconds) // 86400)
    if seconds < 0:
        return f"expired {days} days ago"
    return f"{days} days left" if days else "expires within a day"


def describe_one(cert: x509.Certificate, now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = [str(v) for v in sans.get_values_for_type(x509.DNSName)] + \
                [str(v) for v in sans.get_values_for_type(x509.IPAddress)]
    except x509.ExtensionNotFound:
        names = []
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    fingerprint = cert.fingerprint(hashes.SHA256()).hex(":").upper()
    return (f"subject: {cert.subject.rfc4514_string()}\nissuer: {cert.issuer.rfc4514_string()}\n"
            f"not before: {cert.not_valid_before_utc.isoformat()}\n"
            f"not after: {cert.not_valid_after_utc.isoformat()} ({_left(cert.not_valid_after_utc, now)})\n"
            f"key: {key_type(cert)}\nCA: {'yes' if is_ca else 'no'}\n"
            f"SHA-256 fingerprint: {fingerprint}\nSANs: {', '.join(names) or '-'}")


def describe(path: str, now: dt.datetime | None = None) -> str:
    """Each certificate of the file, a blank line between them."""
    data = read(path)
    return "\n\n".join(describe_one(c, now) for c in certificates(data))
