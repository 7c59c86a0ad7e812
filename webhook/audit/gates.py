"""The feature gates `audit` judges with: the cluster's, read as `serve` reads
them (the API server's `kubernetes_feature_enabled` metric), so an object the
API server admitted with a gate on is not reported as Forbidden by a config
that leaves the gate off. Only when the metric cannot be read (no `get` on the
nonResourceURL /metrics, say) are the config's `featureGates` used, and the
line says so and why."""
from __future__ import annotations

import dataclasses

from webhook.cluster.gates import as_judged, read_gates, shown
from webhook.config import Config


def audit_gates(api, cfg: Config) -> tuple[Config, str]:
    """(the config with the gates the audit judges with, the one line that says which they are)."""
    read, why = read_gates(api)
    if read is not None:
        gates = as_judged(read)
        return dataclasses.replace(cfg, featureGates=gates), f"feature gates from the API server: {shown(gates)}"
    return cfg, (f"feature gates from the config, not the cluster (the API server's /metrics is not readable: "
                 f"{why}): {shown(cfg.featureGates)}")
