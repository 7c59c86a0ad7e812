"""The credentials of a test control plane (tests/e2e/controlplane.py): its CA, the
API server's serving certificate and service-account key, client-certificate users
with their kubeconfigs, and SSL contexts that trust the cluster."""
from __future__ import annotations

import base64
import ipaddress
import ssl
from pathlib import Path
from typing import Iterable

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.e2e.controlplane_processes import LOOPBACK, ControlPlaneError
from tests.e2e.pki import CertificateAuthority, _pem_key, _write


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


class Credentials:
    """Mixin of ControlPlane: its certificates and users (``admin``, ``alice``, add_user)."""

    @property
    def ca_pem(self) -> bytes:
        if self.ca is None:
            raise ControlPlaneError("control plane not started")
        return self.ca.cert_pem

    def kubeconfig(self, user: str = "admin") -> str:
        """Path of the kubeconfig for ``user`` (``admin``, ``alice`` or one from add_user)."""
        try:
            return str(self._kubeconfigs[user])
        except KeyError:
            raise KeyError(f"no kubeconfig for user {user!r}; known: {sorted(self._kubeconfigs)}")

    def client_cert(self, user: str = "admin") -> tuple[str, str]:
        """(cert_path, key_path) of ``user``'s client certificate (PEM)."""
        cert, key = self._client_certs[user]
        return str(cert), str(key)

    def kubectl_cmd(self, *args: str, user: str = "admin") -> list[str]:
        return [self.kubectl, "--kubeconfig", self.kubeconfig(user), *args]

    def issue_cert(self, name: str, **kwargs) -> tuple[Path, Path]:
        """Sign a leaf cert with the cluster CA (e.g. a webhook serving or client cert).

        kwargs as :meth:`CertificateAuthority.issue`. Returns (cert_path, key_path)
        under ``work_dir/pki``.
        """
        assert self.ca is not None, "call start() (or _init_pki()) first"
        cert, key = self.ca.issue(name, **kwargs)
        safe = name.replace(":", "_").replace("/", "_")
        return (
            _write(self.pki_dir / f"{safe}.crt", cert, 0o644),
            _write(self.pki_dir / f"{safe}.key", key),
        )

    def add_user(self, name: str, groups: Iterable[str] = ()) -> str:
        """Create a client-certificate user (CN=name, O=groups) and its kubeconfig."""
        cert, key = self.ca.issue(name, organizations=list(groups), client=True)
        self._client_certs[name] = (
            _write(self.pki_dir / f"{name}-client.crt", cert, 0o644),
            _write(self.pki_dir / f"{name}-client.key", key),
        )
        path = self.work_dir / f"{name}.kubeconfig"
        kc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(self.ca.cert_pem).decode(),
                    },
                }
            ],
            "users": [
                {
                    "name": name,
                    "user": {
                        "client-certificate-data": base64.b64encode(cert).decode(),
                        "client-key-data": base64.b64encode(key).decode(),
                    },
                }
            ],
            "contexts": [{"name": name, "context": {"cluster": "e2e", "user": name, "namespace": "default"}}],
            "current-context": name,
            "preferences": {},
        }
        _write(path, yaml.safe_dump(kc, sort_keys=False).encode())
        self._kubeconfigs[name] = path
        return str(path)

    def _init_pki(self) -> None:
        self.pki_dir.mkdir(parents=True, exist_ok=True)
        self.ca = self._given_ca or CertificateAuthority()
        _write(self.ca_path, self.ca.cert_pem, 0o644)
        sans = [LOOPBACK, *self.extra_sans]
        ips = [a for a in sans if _is_ip(a)]
        self.serving_cert, self.serving_key = self.issue_cert(
            "kube-apiserver",
            dns_names=["localhost", *(a for a in sans if not _is_ip(a))],
            ip_addresses=list(dict.fromkeys(ips)),
            server=True,
        )
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.sa_key_path = _write(self.pki_dir / "sa.key", _pem_key(sa_key))
        self.sa_pub_path = _write(
            self.pki_dir / "sa.pub",
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
            0o644,
        )

    def ssl_context(self, user: str | None = "admin") -> ssl.SSLContext:
        """SSL context trusting the cluster CA, presenting ``user``'s client cert."""
        ctx = ssl.create_default_context(cafile=str(self.ca_path))
        if user is not None:
            cert, key = self.client_cert(user)
            ctx.load_cert_chain(cert, key)
        return ctx

