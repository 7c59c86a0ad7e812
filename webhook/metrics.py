"""Prometheus metrics (ADM-7), a room of its own below every layer that counts
(server, cluster cache, certificates, events), in prometheus_client's
multiprocess mode so every gunicorn worker's counts add up on /metrics.
PROMETHEUS_MULTIPROC_DIR must be set before this module is imported (`serve`
does it). Every series whose labels are known in advance is created at zero
at start-up (webhook/server/series.py), so a fresh /metrics already lists it.

What no process counts is collected when /metrics is rendered: `build_info`,
and what callers add with `collect_at_render` (the certificates' expiry)."""
from __future__ import annotations

import os
import platform
from typing import Iterable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric

ENDPOINTS = ("validate", "mutate")
OUTCOMES = ("allowed", "denied", "patched", "error", "refused")

REQUESTS = Counter("workload_webhook_requests_total", "Admission requests answered",
                   ["endpoint", "kind", "operation", "verdict"])
LATENCY = Histogram("workload_webhook_request_duration_seconds",
                    "Time to answer an admission request, by outcome (refused: a 4xx before judging)",
                    ["endpoint", "outcome"],
                    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
IN_FLIGHT = Gauge("workload_webhook_requests_in_flight",
                  "Admission requests read and not answered within the event loop's turn: waiting for, or judged "
                  "in, a lookup pool", ["endpoint"], multiprocess_mode="livesum")
VIOLATIONS = Counter("workload_webhook_violations_total",
                     "Requests with a violation of the rule (docs/rules.md id; none: an error naming no rule), "
                     "by the action enforced: deny, warn or audit", ["rule", "kind", "operation", "action"])
REJECTED_INPUT = Counter("workload_webhook_rejected_input_total", "Requests refused before judging (4xx)", ["reason"])
REJECTED_REASONS = ("malformed",)          # a body over the limit is the HTTP layer's (body_too_large)
# Every reason a connection refuses a request with (webhook/server/request.py, connection.py).
HTTP_REFUSAL_REASONS = ("malformed", "head_too_large", "host", "framing", "transfer_coding", "expectation", "upgrade",
                        "trailers_too_large", "body_too_large", "incomplete", "head_timeout", "body_timeout", "busy")
HTTP_REFUSED = Counter("workload_webhook_http_refused_total",
                       "Requests the HTTP layer refused (4xx/5xx, then the connection closes), by reason", ["reason"])
CONNECTIONS_DROPPED = Counter("workload_webhook_connections_dropped_total",
                              "Connections closed before a request: TLS handshake failed or timed out", ["phase"])
ERRORS = Counter("workload_webhook_internal_errors_total", "Objects the engine failed to judge", ["endpoint"])
LOOKUPS = Counter("workload_webhook_cluster_lookups_total", "PodGroup/Workload lookups by where the answer came from",
                  ["resource", "source"])
LOOKUP_SOURCES = ("cache", "api", "missing", "unavailable")
TARGETS_UNSERVED = Gauge("workload_webhook_targets_unserved",
                         "1 while a configured target (Kind.group), or a target rule (group/resource), is not served "
                         "by the cluster as the registration names it: nothing is registered meanwhile",
                         ["target"], multiprocess_mode="livemax")     # set by the master (webhook.cluster.registrar)
# The watch caches live in the workers, one per worker: the stalest worker is the one that matters.
CACHE_SYNCED = Gauge("workload_webhook_cluster_cache_synced", "1 when every worker's watch cache of the resource "
                     "has synced", ["resource"], multiprocess_mode="livemin")
CACHE_OBJECTS = Gauge("workload_webhook_cluster_cache_objects", "Objects in the watch cache of the resource "
                      "(the fullest worker's)", ["resource"], multiprocess_mode="livemax")
CACHE_LAST_EVENT = Gauge("workload_webhook_cluster_cache_last_event_timestamp_seconds",
                         "Unix time of the last watch event, bookmark or LIST of the resource (the stalest worker's)",
                         ["resource"], multiprocess_mode="livemin")
CACHE_RELISTS = Counter("workload_webhook_cluster_cache_relists_total",
                        "LISTs of the resource after a worker's first sync (410 Gone, a failed watch)", ["resource"])
# What the kubelet's readiness probe last saw: each worker sets it as it answers /readyz, and the
# latest answer of a live process is the replica's (the master's 0 from start-up until a worker answers).
READY = Gauge("workload_webhook_ready", "1 when the replica's latest /readyz answer was ready (200), 0 when it "
              "was not (503)", multiprocess_mode="livemostrecent")
EVENTS_WRITTEN = Counter("workload_webhook_events_written_total", "Kubernetes Events written for denials (events.enabled)")
EVENTS_DROPPED = Counter("workload_webhook_events_dropped_total",
                         "Events for denials not written: rate_limited (events.perMinute, events.burst), "
                         "queue_full (the API server is slow), failed (the API server refused or did not answer)",
                         ["reason"])
EVENTS_DROP_REASONS = ("rate_limited", "queue_full", "failed")


class AdmissionMetrics:
    """The admission path's metrics with their children looked up once: `labels()` costs
    a few microseconds per call, and every Pod of a burst goes through here."""

    def __init__(self) -> None:
        self._requests: dict[tuple, object] = {}
        self._latency: dict[tuple, object] = {}
        self._violations: dict[tuple, object] = {}
        self._lookups: dict[tuple, object] = {}
        self.in_flight = {e: IN_FLIGHT.labels(e) for e in ENDPOINTS}

    def answered(self, endpoint: str, kind: str, operation: str, outcome: str, elapsed: float, verdict) -> None:
        key = (endpoint, kind, operation, outcome)
        counter = self._requests.get(key)
        if counter is None:
            counter = self._requests[key] = REQUESTS.labels(*key)
        counter.inc()
        self.observe(endpoint, outcome, elapsed)
        if verdict is not None and (verdict.errors or verdict.warned or verdict.audits):
            self._violated(kind, operation, verdict)

    def looked_up(self, resource: str, source: str) -> None:
        counter = self._lookups.get((resource, source))
        if counter is None:
            counter = self._lookups[(resource, source)] = LOOKUPS.labels(resource, source)
        counter.inc()

    def observe(self, endpoint: str, outcome: str, elapsed: float) -> None:
        histogram = self._latency.get((endpoint, outcome))
        if histogram is None:
            histogram = self._latency[(endpoint, outcome)] = LATENCY.labels(endpoint, outcome)
        histogram.observe(elapsed)

    def _violated(self, kind: str, operation: str, verdict) -> None:
        """Once per rule and action of the request, however many fields broke the rule."""
        for action, errors in (("deny", verdict.errors), ("warn", verdict.warned), ("audit", verdict.audits)):
            for rule in {e.id or "none" for e in errors}:
                key = (rule, kind, operation, action)
                counter = self._violations.get(key)
                if counter is None:
                    counter = self._violations[key] = VIOLATIONS.labels(*key)
                counter.inc()


def create(series: Iterable[tuple[object, tuple[str, ...]]]) -> None:
    """Each (metric, label values) at zero, so that it is listed before anything counts it."""
    for metric, labels in series:
        metric.labels(*labels)


class BuildInfo:
    """workload_webhook_build_info{version, python_version, gunicorn_version} 1."""

    def __init__(self) -> None:
        self._labels: list[str] | None = None

    def collect(self) -> Iterable[Metric]:
        if self._labels is None:
            self._labels = [_version("workload-webhook", "unknown"), platform.python_version(),
                            _version("gunicorn", "none")]
        family = GaugeMetricFamily("workload_webhook_build_info", "The running build: 1, with its versions as labels",
                                   labels=["version", "python_version", "gunicorn_version"])
        family.add_metric(self._labels, 1)
        yield family


def _version(distribution: str, missing: str) -> str:
    from importlib import metadata
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:     # a checkout that was never installed
        return missing


_AT_RENDER: list = [BuildInfo()]


def collect_at_render(collector) -> None:
    """A collector (`collect()` yielding metric families) read whenever /metrics is
    rendered, in whichever process renders it (add it before gunicorn forks)."""
    _AT_RENDER.append(collector)


def render() -> tuple[bytes, str]:
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess
        multiprocess.MultiProcessCollector(registry)
    else:
        from prometheus_client import REGISTRY
        registry.register(REGISTRY)      # a registry is a collector: the process's own (the CLI, unit tests)
    for collector in _AT_RENDER:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST


# The live gang model (webhook/gangs/model.py), in the bridge's process, only while it holds the
# bridge's Lease: one replica counts, the others say 0 (alerts take the max over replicas).
GANG_STATES = ("waiting_for_members", "waiting_for_capacity", "scheduled", "degraded", "finished", "failed")
GANGS = Gauge("workload_webhook_gangs", "Gangs (PodGroups with a gang policy) by state, as the live gang model "
              "sees them (the Lease holder; 0 on the other replicas)", ["state"], multiprocess_mode="livemax")
GANG_OLDEST_WAITING = Gauge("workload_webhook_gang_oldest_waiting_seconds",
                            "Seconds since the creation of the oldest gang still waiting for members or capacity "
                            "(0: none waits)", multiprocess_mode="livemax")
GANG_MODEL_SYNCED = Gauge("workload_webhook_gang_model_synced", "1 while this replica's gang model holds the Lease "
                          "and has listed every PodGroup and member Pod", multiprocess_mode="livemax")
_GANG_BUCKETS = (1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600)
GANG_QUORUM_SECONDS = Histogram("workload_webhook_gang_quorum_seconds",
                                "Time from a PodGroup's creation to minCount members existing", buckets=_GANG_BUCKETS)
GANG_BOUND_SECONDS = Histogram("workload_webhook_gang_bound_seconds",
                               "Time from a PodGroup's creation to minCount members bound to nodes (all placed)",
                               buckets=_GANG_BUCKETS)
GANG_DEGRADED_SECONDS = Histogram("workload_webhook_gang_degraded_seconds",
                                  "Time from a PodGroup's creation to its first degradation (fewer than minCount on "
                                  "a node after it was scheduled)", buckets=_GANG_BUCKETS)
GANG_EVENTS = Counter("workload_webhook_gang_events_total",
                      "Events the gang model wrote on PodGroups (written), or could not: failed (refused, no answer); "
                      "rate_limited counts a state change whose Event waited for a token", ["outcome"])
GANG_EVENT_OUTCOMES = ("written", "failed", "rate_limited")
