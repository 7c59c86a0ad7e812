"""The series whose labels are known in advance, created at zero at start-up
(in the master before the fork: each worker writes them into its own file at
its first count), so that a fresh /metrics lists them and a rate() sees the
first increment:

- requests by endpoint, for the kinds that endpoint judges (the scheduling
  kinds and the targets on /validate, Pods and the defaulted targets on
  /mutate), CREATE and UPDATE (Pods: CREATE), each verdict;
- latency and in-flight by endpoint (and outcome), internal errors by endpoint;
- violations by rule, for the kinds the config judges, CREATE and UPDATE
  (Pods: CREATE), every rule that can break there (webhook/catalogue.py),
  each action it can have, and `none`;
- every refusal reason, lookup source, Event drop reason;
- readiness (`workload_webhook_ready`) at 0 until a worker answers /readyz.

The watch caches create theirs in the workers (webhook/cluster/cache.py): a
master's zero would hold their livemin gauges at zero."""
from __future__ import annotations

from webhook import catalogue, kinds, metrics
from webhook.certificates import expiry
from webhook.certificates.files import Paths
from webhook.config import Config

BOTH = ("CREATE", "UPDATE")
POD_OPS = ("CREATE",)
VERDICTS = {"validate": ("allowed", "denied", "error"), "mutate": ("allowed", "patched", "denied", "error")}


def judged(cfg: Config) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """{endpoint: [(kind, operations)]}, as webhook/registration.py registers them."""
    core = [(k.kind, BOTH) for k in kinds.SCHEDULING_KINDS]
    validated = core + [(t.kind, BOTH) for t in cfg.targets]
    if cfg.podValidation == "webhook":
        validated.append((kinds.POD.kind, POD_OPS))
    mutated = [(kinds.POD.kind, POD_OPS)] + [(t.kind, POD_OPS) for t in cfg.targets if t.mutates]
    return {"validate": validated, "mutate": mutated}


def violation_labels(cfg: Config) -> set[tuple[str, str, str, str]]:
    judged = [(k.kind, False, BOTH) for k in kinds.SCHEDULING_KINDS] + [(t.kind, True, BOTH) for t in cfg.targets]
    return set(catalogue.violation_labels([*judged, (kinds.POD.kind, False, POD_OPS)],
                                          bridge=bool(cfg.bridge.dialects)))


def all_series(cfg: Config) -> list[tuple[object, tuple[str, ...]]]:
    out: list[tuple[object, tuple[str, ...]]] = []
    for endpoint, entries in judged(cfg).items():
        out += [(metrics.REQUESTS, (endpoint, kind, op, verdict))
                for kind, ops in entries for op in ops for verdict in VERDICTS[endpoint]]
        out += [(metrics.LATENCY, (endpoint, outcome)) for outcome in metrics.OUTCOMES]
        out += [(metrics.IN_FLIGHT, (endpoint,)), (metrics.ERRORS, (endpoint,))]
    out += [(metrics.VIOLATIONS, labels) for labels in sorted(violation_labels(cfg))]
    out += [(metrics.REJECTED_INPUT, (r,)) for r in metrics.REJECTED_REASONS]
    out += [(metrics.HTTP_REFUSED, (r,)) for r in metrics.HTTP_REFUSAL_REASONS]
    out += [(metrics.CONNECTIONS_DROPPED, ("handshake",))]
    out += [(metrics.LOOKUPS, (k.plural, source)) for k in kinds.CACHED for source in metrics.LOOKUP_SOURCES]
    out += [(metrics.EVENTS_DROPPED, (r,)) for r in metrics.EVENTS_DROP_REASONS]
    return out


def create(cfg: Config) -> int:
    """Every series of `all_series` at zero; returns how many."""
    series = all_series(cfg)
    metrics.create(series)
    return len(series)


_published: set[Paths] = set()


def before_fork(cfg: Config, certificates: Paths) -> None:
    """In the master: every series at zero, and the served certificates' expiry gauges
    (read at each scrape by whichever process renders /metrics)."""
    create(cfg)
    metrics.READY.set(0)                     # not ready until a worker answers /readyz
    if certificates not in _published:       # gunicorn may load its config again
        _published.add(certificates)
        expiry.publish(certificates)
