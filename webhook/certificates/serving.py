"""What `serve` serves with: the certificate files in the cert dir (generated
for development when absent, or mounted), or certificates kept in a Secret
(`certificates.mode: secret`), whose first sync runs in the foreground so there
is a certificate to serve; the loop itself then runs in the gunicorn master
(workers come and go, the master stays) and /healthz fails when it stalls."""
from __future__ import annotations

import datetime as dt
import logging
import os
import time
from dataclasses import dataclass

from webhook.certificates import files
from webhook.certificates.secret import CertSync, Policy, stalled

log = logging.getLogger("workload_webhook.certificates")


@dataclass
class ServingCertificates:
    paths: files.Paths
    sync: CertSync | None = None          # mode secret: the renewal loop to run in the master
    check_interval: float = 30.0

    def loaded(self) -> bool:
        return os.path.exists(self.paths.cert) and os.path.exists(self.paths.key)

    def stalled(self) -> bool:
        return self.sync is not None and stalled(os.path.dirname(self.paths.cert), self.check_interval)


def _secret_sync(cfg, cert_dir: str, cluster_mode: str, kubeconfig: str | None) -> CertSync:
    from webhook.cluster.cache import api_client
    c = cfg.certificates
    api = api_client("kubeconfig" if cluster_mode == "kubeconfig" else "auto", kubeconfig)
    if api is None:
        raise RuntimeError("certificates.mode secret needs a cluster (in-cluster or a kubeconfig)")
    namespace, _, name = c.secret.partition("/")
    policy = Policy(ca_validity=dt.timedelta(seconds=c.caValiditySeconds),
                    leaf_validity=dt.timedelta(seconds=c.leafValiditySeconds),
                    grace=dt.timedelta(seconds=c.graceSeconds),
                    dns_names=tuple(c.dnsNames) or files.DEFAULT_DNS)
    return CertSync(api, namespace, name, c.webhookConfiguration, cert_dir, policy, ca_configmap=c.caConfigMap)


def provision(cfg, settings, kubeconfig: str | None, first_sync_seconds: float = 60) -> ServingCertificates | None:
    """The certificates to serve with; None (and a message) when there are none."""
    if cfg.certificates.mode != "secret":
        paths, generated = files.ensure(settings.certDir)
        if generated:
            log.info("generated development certificates in %s; CA: %s", settings.certDir, paths.ca_cert)
        else:
            log.info("serving with %s", paths.cert)
        return ServingCertificates(paths)
    deadline = time.monotonic() + first_sync_seconds
    while True:
        try:
            sync = _secret_sync(cfg, settings.certDir, settings.cluster, kubeconfig)
            sync.step()
            break
        except Exception as exc:
            if time.monotonic() > deadline:
                log.error("certificates from Secret %s: %s", cfg.certificates.secret, exc)
                return None
            time.sleep(2)
    log.info("serving certificates from Secret %s (renewed automatically)", cfg.certificates.secret)
    return ServingCertificates(sync.paths, sync, cfg.certificates.checkIntervalSeconds)
