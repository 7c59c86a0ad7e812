"""Certificates kept in a Kubernetes Secret (the chart's `self` mode).

Every replica runs the same loop: read the Secret (create it if missing: the
first writer wins, the others adopt what it wrote), renew what is due, write
tls.crt/tls.key into the serving directory (the server reloads them), and make
the caBundle of this service's two webhook configurations equal the Secret's
CA bundle. Renewal happens at 2/3 of a certificate's life. A new CA is first
only *added* to the bundle; the serving certificate moves to it one grace
period later, and the old CA leaves the bundle one grace period after that,
so the API server trusts the served certificate at every moment.

`plan` is a pure function of the stored state and the time (unit-tested);
`CertSync` does the I/O through webhook/cluster/api.py, on the objects as the
API server sends them (camelCase dicts), writing as CERTIFICATES (its requests:
tests/unit/test_certsync_requests.py; proven in e2e)."""
from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import logging
import os
import threading
from dataclasses import dataclass, replace

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from webhook.certificates import files as certs
from webhook.cluster.api import CERTIFICATES, JSON_PATCH, MERGE_PATCH, Api, path
from webhook.cluster.webhook_configurations import KINDS, PLURALS

log = logging.getLogger("workload_webhook.certsync")

ANNOTATION_STAGE = "workload-webhook.k8s.io/ca-rotation-started"


@dataclass(frozen=True)
class Material:
    """What the Secret holds: a CA bundle (PEM, newest first), the signing CA
    and its key, and the serving certificate and key."""
    bundle: bytes
    ca_cert: bytes
    ca_key: bytes
    tls_cert: bytes
    tls_key: bytes
    rotation_started: dt.datetime | None = None   # when the newest CA joined the bundle

    @classmethod
    def from_secret(cls, data: dict[str, str], annotations: dict[str, str] | None) -> "Material | None":
        try:
            raw = {k: base64.b64decode(data[k]) for k in ("ca.crt", "ca-signing.crt", "ca.key", "tls.crt", "tls.key")}
            for key in ("ca.crt", "ca-signing.crt", "tls.crt"):
                x509.load_pem_x509_certificates(raw[key])
        except (KeyError, TypeError, ValueError):
            return None
        return cls(raw["ca.crt"], raw["ca-signing.crt"], raw["ca.key"], raw["tls.crt"], raw["tls.key"],
                   _parse_started((annotations or {}).get(ANNOTATION_STAGE)))

    def secret_data(self) -> dict[str, str]:
        enc = lambda b: base64.b64encode(b).decode()  # noqa: E731
        return {"ca.crt": enc(self.bundle), "ca-signing.crt": enc(self.ca_cert), "ca.key": enc(self.ca_key),
                "tls.crt": enc(self.tls_cert), "tls.key": enc(self.tls_key)}

    def annotations(self, existing: dict[str, str] | None = None) -> dict[str, str]:
        out = {k: v for k, v in (existing or {}).items() if k != ANNOTATION_STAGE}
        if self.rotation_started:
            out[ANNOTATION_STAGE] = self.rotation_started.isoformat()
        return out


def _parse_started(text: str | None) -> dt.datetime | None:
    """The rotation timestamp; a garbled one counts as "just now" (the safe side:
    the next step waits a full grace period)."""
    if not text:
        return None
    try:
        started = dt.datetime.fromisoformat(text)
    except ValueError:
        return dt.datetime.now(dt.timezone.utc)
    return started if started.tzinfo else started.replace(tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Policy:
    ca_validity: dt.timedelta = dt.timedelta(days=3650)
    leaf_validity: dt.timedelta = dt.timedelta(days=365)
    grace: dt.timedelta = dt.timedelta(minutes=2)      # time for every replica and the API server to see a change
    dns_names: tuple[str, ...] = certs.DEFAULT_DNS
    ips: tuple[str, ...] = certs.DEFAULT_IPS


def _pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _certs(pem: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(pem)


def _due(cert: x509.Certificate, validity: dt.timedelta, now: dt.datetime) -> bool:
    """Renew at 2/3 of the intended life: when less than a third remains."""
    return cert.not_valid_after_utc - now < validity / 3


def _issue_leaf(ca_pem: bytes, ca_key_pem: bytes, policy: Policy, now: dt.datetime | None = None) -> tuple[bytes, bytes]:
    ca = x509.load_pem_x509_certificate(ca_pem)
    key = serialization.load_pem_private_key(ca_key_pem, password=None)
    leaf, leaf_key = certs.make_serving(ca, key, policy.dns_names, policy.ips, validity=policy.leaf_validity, now=now)
    return _pem(leaf), certs.pem_key(leaf_key)


def fresh(policy: Policy, still_trusted: bytes = b"", now: dt.datetime | None = None) -> Material:
    """New CA and serving certificate. CAs the API server still trusts for
    certificates other replicas serve (`still_trusted`) stay in the bundle for a
    grace period, so starting afresh is a rotation too, not a cut."""
    now = now or dt.datetime.now(dt.timezone.utc)
    ca, ca_key = certs.make_ca("workload-webhook CA", validity=policy.ca_validity, now=now)
    ca_pem, key_pem = _pem(ca), certs.pem_key(ca_key)
    tls, tls_key = _issue_leaf(ca_pem, key_pem, policy, now)
    kept = b"".join(_pem(c) for c in _certs(still_trusted) if c.not_valid_after_utc > now) if still_trusted else b""
    return Material(ca_pem + kept, ca_pem, key_pem, tls, tls_key, rotation_started=now if kept else None)


def _sans(cert: x509.Certificate) -> set[str]:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(v) for v in ext.get_values_for_type(x509.DNSName)} | \
        {str(v) for v in ext.get_values_for_type(x509.IPAddress)}


def plan(m: Material, policy: Policy, now: dt.datetime, published: bool = True) -> tuple[Material, str] | None:
    """The next step of the rotation, or None when nothing is due. `published`:
    both webhook configurations carry this bundle; the serving certificate only
    moves to a new CA once they do."""
    signing = x509.load_pem_x509_certificate(m.ca_cert)
    bundle = _certs(m.bundle)
    leaf = x509.load_pem_x509_certificate(m.tls_cert)
    leaf_by_signing = _issued_by(leaf, signing)
    settled = published and (m.rotation_started is None or now - m.rotation_started >= policy.grace)
    wanted_sans = set(policy.dns_names) | {str(ipaddress.ip_address(i)) for i in policy.ips}

    # 1. A CA nearing its end: add a new one to the bundle, keep serving the old leaf.
    if _due(signing, policy.ca_validity, now) and m.rotation_started is None:
        ca, ca_key = certs.make_ca("workload-webhook CA", validity=policy.ca_validity, now=now)
        new_bundle = _pem(ca) + b"".join(_pem(c) for c in bundle if c.not_valid_after_utc > now)
        return replace(m, bundle=new_bundle, ca_cert=_pem(ca), ca_key=certs.pem_key(ca_key),
                       rotation_started=now), "new CA added to the bundle"
    # 2. One grace period later: serve a leaf from the new CA (or renew a leaf that is due).
    if settled and (not leaf_by_signing or _due(leaf, policy.leaf_validity, now) or _sans(leaf) != wanted_sans):
        tls, tls_key = _issue_leaf(m.ca_cert, m.ca_key, policy, now)
        return replace(m, tls_cert=tls, tls_key=tls_key,
                       rotation_started=now if m.rotation_started else None), "serving certificate renewed"
    # 3. Another grace period later: drop the CAs nothing is signed by any more.
    if settled and leaf_by_signing and len(bundle) > 1:
        return replace(m, bundle=m.ca_cert, rotation_started=None), "old CA removed from the bundle"
    return None


def _issued_by(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    from cryptography.exceptions import InvalidSignature
    try:
        leaf.verify_directly_issued_by(ca)
        return True
    except (ValueError, TypeError, InvalidSignature):
        return False


TIMEOUT = (5, 15)     # connect, read: a half-open connection must not hang the loop
HEARTBEAT = ".sync-heartbeat"


class CertSync:
    """The I/O side: one Secret, two webhook configurations, one serving directory."""

    def __init__(self, api_client, namespace: str, secret: str, webhook_config: str, cert_dir: str,
                 policy: Policy = Policy(), ca_configmap: str | None = None):
        self.api = Api.of(api_client, field_manager=CERTIFICATES)
        self.namespace, self.secret, self.webhook_config = namespace, secret, webhook_config
        self.paths = certs.Paths.in_dir(cert_dir)
        self.heartbeat = os.path.join(cert_dir, HEARTBEAT)
        self.policy = policy
        self.ca_configmap = ca_configmap

    def _get(self, at: str) -> dict | None:
        """The object at `at`; None when there is none (404)."""
        from kubernetes.client.rest import ApiException
        try:
            return self.api.expect("GET", at, timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def _secret_path(self, name: str | None = None) -> str:
        return path("", "v1", "secrets", self.namespace, name)

    def _read(self) -> dict | None:
        return self._get(self._secret_path(self.secret))

    def _webhooks(self) -> list[tuple[dict, str]]:
        """(configuration, its path) for each of the two that exist (one not installed yet:
        nothing to patch)."""
        out = []
        for kind in KINDS:
            at = path("admissionregistration.k8s.io", "v1", PLURALS[kind], name=self.webhook_config)
            if (conf := self._get(at)) is not None:
                out.append((conf, at))
        return out

    def step(self, now: dt.datetime | None = None) -> str | None:
        """One reconcile; returns what changed in the Secret, if anything. Replicas
        race through resourceVersion: a loser re-reads and adopts the winner's result."""
        from kubernetes.client.rest import ApiException
        now = now or dt.datetime.now(dt.timezone.utc)
        for _ in range(5):
            secret, changed = self._read(), None
            hooks = self._webhooks()
            trusted = b"".join(base64.b64decode(_bundle_of(h) or "")
                               for conf, _ in hooks for h in (conf.get("webhooks") or [])[:1])
            if secret is None:
                m, changed = fresh(self.policy, trusted, now), "created"
                meta = {"name": self.secret, "namespace": self.namespace,
                        "labels": {"app.kubernetes.io/name": "workload-webhook"}}
                if annotations := m.annotations():
                    meta["annotations"] = annotations
                body = {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
                        "data": m.secret_data()}
                write = lambda: self.api.expect("POST", self._secret_path(), body, timeout=TIMEOUT)  # noqa: E731
            else:
                meta = secret.setdefault("metadata", {})
                m = Material.from_secret(secret.get("data") or {}, meta.get("annotations"))
                if m is None:                   # empty (made by the chart) or unusable: start afresh
                    m, changed = fresh(self.policy, trusted, now), "issued new certificates"
                else:
                    published = bool(hooks) and all(self._carries(conf, m.bundle) for conf, _ in hooks)
                    if (step := plan(m, self.policy, now, published)) is not None:
                        m, changed = step
                secret["data"] = m.secret_data()
                meta["annotations"] = m.annotations(meta.get("annotations"))
                write = lambda: self.api.expect("PUT", self._secret_path(self.secret), secret,  # noqa: E731
                                                timeout=TIMEOUT)
            if changed:
                try:
                    write()                     # guarded by resourceVersion (replace) or existence (create)
                except ApiException as exc:
                    if exc.status == 409:
                        continue                # another replica was first: read again, adopt its result
                    if exc.status == 403 and secret is None:
                        raise RuntimeError(f"Secret {self.namespace}/{self.secret} is missing and this service may "
                                           "not create it; `helm upgrade` restores it") from None
                    raise
                log.info("certificates: %s", changed)
            self._write_files(m)
            for conf, at in hooks:
                self._publish(conf, at, m.bundle)
            self._publish_ca_configmap(m.bundle)
            return changed
        raise RuntimeError(f"Secret {self.namespace}/{self.secret} kept changing under us")

    def _write_files(self, m: Material) -> None:
        os.makedirs(os.path.dirname(self.paths.cert) or ".", exist_ok=True)
        for file, data, mode in ((self.paths.ca_cert, m.bundle, 0o644), (self.paths.key, m.tls_key, 0o600),
                                 (self.paths.cert, m.tls_cert, 0o644)):
            try:
                with open(file, "rb") as f:
                    if f.read() == data:
                        continue
            except OSError:
                pass
            certs.write_atomic(file, data, mode)   # key first: the reloader pairs them by content

    @staticmethod
    def _carries(conf: dict, bundle: bytes) -> bool:
        encoded = base64.b64encode(bundle).decode()
        return all((_bundle_of(h) or "") == encoded for h in conf.get("webhooks") or [])

    def _publish(self, conf: dict, at: str, bundle: bytes) -> None:
        """Make every webhook of the configuration carry `bundle`; the patch applies
        only to the version read (a concurrent change makes it fail, not misapply)."""
        if self._carries(conf, bundle):
            return
        encoded = base64.b64encode(bundle).decode()
        version = (conf.get("metadata") or {}).get("resourceVersion")
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}]
        ops += [{"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": encoded}
                for i in range(len(conf.get("webhooks") or []))]
        self.api.expect("PATCH", at, ops, content_type=JSON_PATCH, timeout=TIMEOUT)

    def _publish_ca_configmap(self, bundle: bytes) -> None:
        """The CA bundle alone, for scrapers (the chart creates the ConfigMap; absent: nothing to do)."""
        if not self.ca_configmap:
            return
        at = path("", "v1", "configmaps", self.namespace, self.ca_configmap)
        cm = self._get(at)
        if cm is not None and (cm.get("data") or {}).get("ca.crt") != bundle.decode():
            self.api.expect("PATCH", at, {"data": {"ca.crt": bundle.decode()}}, content_type=MERGE_PATCH,
                            timeout=TIMEOUT)

    def run(self, interval: float, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.step()
            except Exception as exc:  # keep serving the last good certificates; say why
                log.warning("certificate sync failed: %s", str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__)
            try:  # the loop is alive (every call is bounded by TIMEOUT); /healthz watches this
                with open(self.heartbeat, "w") as f:
                    f.write(dt.datetime.now(dt.timezone.utc).isoformat())
            except OSError:
                pass
            stop.wait(interval)


def _bundle_of(hook: dict) -> str | None:
    return (hook.get("clientConfig") or {}).get("caBundle")


def stalled(cert_dir: str, interval: float) -> bool:
    """True when the sync loop has not completed a step for 3 intervals (plus a minute)."""
    import time
    try:
        age = time.time() - os.path.getmtime(os.path.join(cert_dir, HEARTBEAT))
    except OSError:
        return False
    return age > 3 * interval + 60
