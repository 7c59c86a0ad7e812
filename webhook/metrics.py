"""Prometheus metrics (ADM-7), a room of its own below every layer that counts
(server, cluster cache), in prometheus_client's multiprocess mode so every
gunicorn worker's counts add up on /metrics. PROMETHEUS_MULTIPROC_DIR
must be set before this module is imported (`serve` does it)."""
from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

REQUESTS = Counter("workload_webhook_requests_total", "Admission requests answered",
                   ["endpoint", "kind", "operation", "verdict"])
LATENCY = Histogram("workload_webhook_request_duration_seconds", "Time to answer an admission request",
                    ["endpoint"], buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
REJECTED_INPUT = Counter("workload_webhook_rejected_input_total", "Requests refused before judging (4xx)", ["reason"])
# Every reason a connection refuses a request with (webhook/server/request.py, connection.py),
# so that each series exists from start-up at zero (webhook/server/worker.py creates them).
HTTP_REFUSAL_REASONS = ("malformed", "head_too_large", "host", "framing", "expectation", "upgrade",
                        "trailers_too_large", "body_too_large", "incomplete", "head_timeout", "body_timeout", "busy")
HTTP_REFUSED = Counter("workload_webhook_http_refused_total",
                       "Requests the HTTP layer refused (4xx/5xx, then the connection closes), by reason", ["reason"])
CONNECTIONS_DROPPED = Counter("workload_webhook_connections_dropped_total",
                              "Connections closed before a request: TLS handshake failed or timed out", ["phase"])
ERRORS = Counter("workload_webhook_internal_errors_total", "Objects the engine failed to judge", ["endpoint"])
LOOKUPS = Counter("workload_webhook_cluster_lookups_total", "PodGroup/Workload lookups by where the answer came from",
                  ["resource", "source"])   # source: cache | api | missing | unavailable
ENFORCED = Counter("workload_webhook_enforced_violations_total",
                   "Violations admitted by the enforcement config (action warn or audit), by rule id", ["rule", "action"])
TARGETS_UNSERVED = Gauge("workload_webhook_targets_unserved",
                         "1 while a configured target (Kind.group), or a target rule (group/resource), is not served "
                         "by the cluster as the registration names it: nothing is registered meanwhile",
                         ["target"], multiprocess_mode="livemax")     # set by the master (webhook.cluster.registrar)
CACHE_SYNCED = Gauge("workload_webhook_cluster_cache_synced", "1 when this worker's watch cache of the resource has synced",
                     ["resource"], multiprocess_mode="livemin")


def render() -> tuple[bytes, str]:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST
