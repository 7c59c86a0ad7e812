"""Kubernetes Events for denials (`events.enabled`), as Gatekeeper's
--emit-admission-events writes them: one events.k8s.io/v1 Event of type
Warning, reason `Denied`, in the denied object's namespace (`default` for a
cluster-scoped object), `regarding` the object by kind, name and namespace
(its uid and resourceVersion on UPDATE: a denied CREATE has neither), with
the user, the operation, the rule ids and the first errors in its note.

Written off the admission path. A denial takes a token from the worker's
bucket (`events.perMinute`, `events.burst`) and puts a small dict on a
bounded queue; a thread of the worker writes it with a bounded timeout. A
denial that finds no token, or a full queue (the API server is slow), is
dropped and counted (workload_webhook_events_dropped_total{reason}), as is an
Event the API server refuses. Dry-run requests write none: nothing happened.
What is still queued when a worker exits is lost."""
from __future__ import annotations

import datetime as dt
import logging
import os
import queue
import socket
import threading
import time
from typing import Callable
from urllib.parse import quote

from webhook import formats, metrics

log = logging.getLogger("workload_webhook.events")

QUEUE_SIZE = 100                 # Events waiting for the writer thread, per worker
WRITE_TIMEOUT = 5.0              # seconds per Event written
NOTE_BYTES = 1024                # kube-apiserver's limit on an Event's note (bytes)
ERRORS_IN_NOTE = 5
CONTROLLER = "workload-webhook"  # reportingController: a qualified name
ANNOTATION_RULES = "workload-webhook.k8s.io/rules"
ANNOTATION_USER = "workload-webhook.k8s.io/user"
MAX_NAME = 253


class TokenBucket:
    """`burst` tokens, refilled at `per_minute` a minute; safe across threads (the event
    loop and the lookup pool both answer)."""

    def __init__(self, per_minute: int, burst: int, clock: Callable[[], float] = time.monotonic):
        self.rate, self.capacity, self.clock = per_minute / 60.0, float(burst), clock
        self.tokens, self.at = float(burst), clock()
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            now = self.clock()
            # A wall clock stepped back (the gang model's) refills nothing and costs nothing.
            self.tokens = min(self.capacity, self.tokens + max(0.0, now - self.at) * self.rate)
            self.at = now
            if self.tokens >= 1.0:
                self.tokens -= 1.0
                return True
            return False


def _text(value, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _note(text: str) -> str:
    """At most NOTE_BYTES bytes of UTF-8 (the API server counts bytes), cut on a character."""
    data = text.encode("utf-8", "replace")
    if len(data) <= NOTE_BYTES:
        return text
    return data[:NOTE_BYTES - 3].decode("utf-8", "ignore") + "..."


def event_for(review, endpoint: str, verdict, instance: str, now: dt.datetime, suffix: str) -> tuple[str, dict]:
    """(namespace, the events.k8s.io/v1 Event) for a denied request; every value bounded."""
    req = review.request
    obj = req.object if isinstance(req.object, dict) else {}
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = _text(review.name or meta.get("name"), MAX_NAME)
    regarding = {"apiVersion": f"{req.group}/{req.version}" if req.group else req.version, "kind": req.kind,
                 "name": name, "namespace": req.namespace or ""}
    old = (req.old or {}).get("metadata") if isinstance((req.old or {}).get("metadata"), dict) else {}
    if old.get("uid"):
        regarding["uid"] = _text(old["uid"], 128)
        regarding["resourceVersion"] = _text(old.get("resourceVersion"), 128)
    rules = sorted({e.id or "none" for e in verdict.errors})
    user = _text(review.user, 256) or "an unknown user"
    shown = name or f"a new object named {_text(meta.get('generateName'), MAX_NAME)}*"
    note = (f"{user}: {req.operation} of {req.kind} {shown} denied by the workload-webhook {endpoint} webhook "
            f"({', '.join(rules)}): " + "; ".join(str(e) for e in verdict.errors[:ERRORS_IN_NOTE]))
    # An object's own name may be what was denied (not a DNS subdomain, too long): then a name of ours.
    prefix = name if name and len(name) <= MAX_NAME - 40 and not formats.dns_subdomain(name) else CONTROLLER
    namespace = req.namespace or "default"
    event = {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": f"{prefix}.{suffix}", "namespace": namespace,
                     "annotations": {ANNOTATION_RULES: ",".join(rules)[:1024], ANNOTATION_USER: _text(review.user, 256)}},
        "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "type": "Warning", "reason": "Denied", "action": req.operation.capitalize(),
        "reportingController": CONTROLLER, "reportingInstance": instance[:128],
        "regarding": regarding, "note": _note(note),
    }
    return namespace, event


class Recorder:
    """Denials in, Events out by a thread of its own; `denied` never blocks."""

    def __init__(self, write: Callable[[str, dict], None], per_minute: int, burst: int, instance: str,
                 queue_size: int = QUEUE_SIZE, clock: Callable[[], float] = time.monotonic):
        self.write, self.instance = write, instance
        self.bucket = TokenBucket(per_minute, burst, clock)
        self.queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._last_failure: str | None = None
        self._dropped = {r: metrics.EVENTS_DROPPED.labels(r) for r in metrics.EVENTS_DROP_REASONS}

    def denied(self, review, endpoint: str, verdict) -> None:
        if review.request.dry_run:
            return
        if not self.bucket.take():
            self._dropped["rate_limited"].inc()
            return
        suffix = f"{time.time_ns():x}{os.getpid() & 0xffff:04x}"
        try:
            self.queue.put_nowait(event_for(review, endpoint, verdict, self.instance,
                                            dt.datetime.now(dt.timezone.utc), suffix))
        except queue.Full:
            self._dropped["queue_full"].inc()
            return
        if self._thread is None:
            self._start()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._drain, name="events", daemon=True)
                self._thread.start()

    def _drain(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            namespace, event = item
            try:
                self.write(namespace, event)
                metrics.EVENTS_WRITTEN.inc()
            except Exception as exc:         # refused (RBAC, a terminating namespace) or no answer
                self._dropped["failed"].inc()
                why = failure_reason(exc)
                # Once per kind of failure at warning (a missing RBAC rule fails every Event alike).
                level = logging.DEBUG if why == self._last_failure else logging.WARNING
                self._last_failure = why
                log.log(level, "event for %s %s/%s not written: %s", event["regarding"]["kind"], namespace,
                        event["regarding"]["name"][:64], why)

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued, then end the thread (tests; a worker just exits)."""
        if self._thread is not None:
            self.queue.put(None)
            self._thread.join(timeout)


def write(api, namespace: str, event: dict, timeout: float = WRITE_TIMEOUT) -> None:
    """The service's one Event writer: POST an events.k8s.io/v1 Event (the admission
    Recorder's thread and the bridge both write through it). Raises the client's
    ApiException when the API server refuses it, its transport's error when none answers."""
    from webhook.cluster.api import Api, error
    reply = Api.of(api).send("POST", f"/apis/events.k8s.io/v1/namespaces/{quote(namespace, safe='')}/events",
                             body=event, timeout=timeout)
    body = reply.read()
    if reply.status not in (200, 201):
        raise error(reply.status, reply.reason, body)


def failure_reason(exc: BaseException) -> str:
    """Why an Event was not written, in a few words: the answer's status, else the error's kind."""
    status = getattr(exc, "status", None)
    return f"{status} {getattr(exc, 'reason', '') or ''}".strip() if status else type(exc).__name__


def regarding_event(regarding: dict, reason: str, note: str, warning: bool, action: str, controller: str,
                    instance: str, now: dt.datetime, suffix: str) -> dict:
    """An events.k8s.io/v1 Event about `regarding` (apiVersion, kind, name, namespace, uid) by
    `controller` (a qualified name), every value bounded; its namespace is the object's."""
    name = _text(regarding.get("name"), MAX_NAME)
    prefix = name if name and len(name) <= MAX_NAME - 40 and not formats.dns_subdomain(name) else controller
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{prefix}.{suffix}", "namespace": regarding.get("namespace") or "default"},
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "type": "Warning" if warning else "Normal", "reason": reason[:128], "action": action[:128],
            "reportingController": controller, "reportingInstance": instance[:128],
            "regarding": {k: v for k, v in regarding.items() if v}, "note": _note(note)}


def api_writer(api_client) -> Callable[[str, dict], None]:
    def writer(namespace: str, event: dict) -> None:
        write(api_client, namespace, event)
    return writer


def recorder(settings, view) -> Recorder | None:
    """The worker's Recorder when `events.enabled` and the view talks to a cluster, else None."""
    if not settings.enabled:
        return None
    api_client = getattr(view, "api_client", None)
    if api_client is None:
        log.warning("events.enabled but no cluster connection (server.cluster): no Events are written")
        return None
    instance = os.environ.get("HOSTNAME") or socket.gethostname() or CONTROLLER
    return Recorder(api_writer(api_client), settings.perMinute, settings.burst, instance)
