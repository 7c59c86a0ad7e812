"""workload_webhook_certificate_expiry_timestamp_seconds{certificate}: the
notAfter (Unix time) of the files being served, as cert-manager's
certmanager_certificate_expiration_timestamp_seconds: `serving` (tls.crt) and
`ca` (the CA in ca.crt that issued it; the first to expire when none of them
did). Read when /metrics is rendered, so it follows the files whoever
rotates them (the Secret sync, cert-manager, a mounted Secret), and parsed
again only when a file changes. A missing or unreadable file has no series."""
from __future__ import annotations

import threading
from typing import Iterable

from cryptography import x509

from webhook.certificates import pem
from webhook.certificates import files
from webhook.certificates.files import Paths

NAME = "workload_webhook_certificate_expiry_timestamp_seconds"
HELP = "Unix time of the notAfter of the certificate being served (serving: tls.crt; ca: its CA in ca.crt)"


def _read(path: str) -> list[x509.Certificate]:
    return pem.certificates(pem.read(path))


def not_after(serving: list[x509.Certificate], bundle: list[x509.Certificate]) -> dict[str, float]:
    """{certificate: Unix time} of a serving chain and a CA bundle (pure)."""
    out: dict[str, float] = {}
    if serving:
        out["serving"] = serving[0].not_valid_after_utc.timestamp()
    if bundle:
        issuers = [c for c in bundle if serving and c.subject == serving[0].issuer]
        out["ca"] = min(c.not_valid_after_utc.timestamp() for c in (issuers or bundle))
    return out


class Expiry:
    """A collector of the two gauges, for webhook.metrics.collect_at_render."""

    def __init__(self, paths: Paths):
        self.cert, self.ca = paths.cert, paths.ca_cert
        self._lock = threading.Lock()
        self._seen: tuple | None = None
        self._values: dict[str, float] = {}

    def values(self) -> dict[str, float]:
        stamp = (files.stamp(self.cert), files.stamp(self.ca))
        with self._lock:
            if stamp != self._seen:
                self._values = not_after(self._certificates(self.cert), self._certificates(self.ca))
                self._seen = stamp
            return self._values

    @staticmethod
    def _certificates(path: str) -> list[x509.Certificate]:
        try:
            return _read(path)
        except (OSError, ValueError):        # absent, half-written (read again when it changes), not PEM
            return []

    def collect(self) -> Iterable:
        from prometheus_client.core import GaugeMetricFamily
        family = GaugeMetricFamily(NAME, HELP, labels=["certificate"])
        for name, value in sorted(self.values().items(), reverse=True):
            family.add_metric([name], value)
        yield family


def publish(paths: Paths) -> Expiry:
    """Serve the gauges of these files on /metrics (call before gunicorn forks)."""
    from webhook import metrics
    collector = Expiry(paths)
    metrics.collect_at_render(collector)
    return collector
