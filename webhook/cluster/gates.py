"""The feature gates `serve` judges core objects with: the cluster's own.

A validating webhook is called after the API server's own validation, so a
gated field that reaches it was allowed by the API server's gates; refusing it
again from a config value would second-guess the server (and, with
PodGroupPreemptionPolicy on, refuse the Job controller's PodGroups, which the
API server defaults). `serve` therefore reads the gates from the API server's
`kubernetes_feature_enabled` metric; where that is not readable, every gate
counts as on and the gate checks are left to the API server. `audit` reads
them the same way (webhook.audit.gates); the config's `featureGates` is for
`validate` and `mutate`, and for an audit that cannot read the cluster's."""
from __future__ import annotations

import logging
import re

from webhook.config import DEFAULT_GATES

log = logging.getLogger("workload_webhook.gates")

_METRIC = re.compile(r'^kubernetes_feature_enabled\{([^}]*)\}\s+([0-9.eE+-]+)\s*$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
MAX_METRICS_BYTES = 64 << 20
# connect, read: connecting (TLS included) is bounded as every request of the API layer
# (cluster/api.py TIMEOUT); a silent API server held serve's start-up 10 s here before.
TIMEOUT = (5, 10)


def from_metrics(text: str) -> dict[str, bool]:
    """Gate name -> enabled, from Prometheus text exposition."""
    gates = {}
    for line in text.splitlines():
        m = _METRIC.match(line)
        if not m:
            continue
        labels = dict(_LABEL.findall(m.group(1)))
        if "name" in labels:
            try:
                gates[labels["name"]] = float(m.group(2)) > 0
            except ValueError:
                continue
    return gates


def read_gates(api, timeout=TIMEOUT) -> tuple[dict[str, bool] | None, str]:
    """(the API server's gates, or None when its /metrics cannot be read; why not, in one line)."""
    from webhook.cluster.api import Api
    try:
        status, body = Api.of(api).raw("GET", "/metrics", accept="text/plain", timeout=timeout)
        if status != 200:
            raise RuntimeError(f"HTTP {status}")
    except Exception as exc:          # 403 without the RBAC rule, an unreachable server, ...
        status = getattr(exc, "status", None)        # an ApiException: "403 Forbidden"
        why = f"{status} {getattr(exc, 'reason', '')}".strip() if status else (str(exc).splitlines() or [""])[0][:200]
        log.info("the API server's /metrics is not readable (%s)", why)
        return None, why
    gates = from_metrics(body[:MAX_METRICS_BYTES].decode("utf-8", "replace"))
    return (gates, "") if gates else (None, "it reports no kubernetes_feature_enabled metric")


def read_cluster_gates(api, timeout=TIMEOUT) -> dict[str, bool] | None:
    """The API server's gates, or None when its /metrics cannot be read."""
    return read_gates(api, timeout)[0]


def as_judged(read: dict[str, bool]) -> dict[str, bool]:
    """The service's gates from what the API server reported: one it does not report counts as on
    (a field it has no gate for was admitted or dropped by it)."""
    return {name: read.get(name, True) for name in DEFAULT_GATES}


def shown(gates: dict[str, bool]) -> str:
    return ", ".join(f"{k}={'on' if v else 'off'}" for k, v in gates.items())


def serving_gates(api) -> tuple[dict[str, bool], str]:
    """(the gates serve judges with, how they were found: a line for the log)."""
    read = read_cluster_gates(api) if api is not None else None
    if read is not None:
        gates = as_judged(read)
        return gates, f"feature gates from the API server: {shown(gates)}"
    return ({name: True for name in DEFAULT_GATES},
            "feature gates: left to the API server (its /metrics is not readable); gated fields it admitted are accepted")
