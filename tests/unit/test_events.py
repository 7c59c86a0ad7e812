"""Kubernetes Events for denials (events.enabled), the parts that need no
server: the Event built from a denied request (bounded, valid for
events.k8s.io/v1), the token bucket (events.perMinute, events.burst) and the
bounded queue, each drop counted by reason. The writer here is the recorder's
input, not a stand-in API server: the real one is in tests/e2e/test_events.py."""
from __future__ import annotations

import datetime as dt
import json
import threading

from prometheus_client import REGISTRY

from tests.unit.helpers import config, trainjob
from webhook import engine, formats
from webhook.admission import review
from webhook.cluster import events
from webhook.config import ConfigError, from_dict

import pytest

BAD = trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})          # DIS-2
NOW = dt.datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)


def _parsed(obj, operation="CREATE", old=None, name=None, user="alice", dry_run=False, namespace="ml"):
    req = {"uid": "u1", "kind": {"group": "training.example.com", "version": "v1alpha1", "kind": obj["kind"]},
           "operation": operation, "namespace": namespace, "name": obj["metadata"].get("name", "") if name is None
           else name, "object": obj, "userInfo": {"username": user}, "dryRun": dry_run}
    if old is not None:
        req["oldObject"] = old
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}).encode()
    parsed = review.parse(body, "application/json")
    return parsed, engine.validate(parsed.request, config())


def _dropped(reason: str) -> float:
    return REGISTRY.get_sample_value("workload_webhook_events_dropped_total", {"reason": reason}) or 0.0


def test_an_event_regards_the_denied_object_in_its_namespace_with_user_rules_and_errors():
    parsed, verdict = _parsed(BAD)
    namespace, event = events.event_for(parsed, "validate", verdict, "ww-0", NOW, "abc")
    assert namespace == "ml" == event["metadata"]["namespace"]
    assert event["regarding"] == {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "name": "tj",
                                  "namespace": "ml"}                        # a denied CREATE has no uid yet
    assert (event["type"], event["reason"], event["action"]) == ("Warning", "Denied", "Create")
    assert event["eventTime"] == "2026-05-01T12:00:00.123456Z" and event["reportingInstance"] == "ww-0"
    assert event["note"].startswith("alice: CREATE of TrainJob tj denied by the workload-webhook validate webhook "
                                    "(DIS-2): spec.scheduling.disruptionMode: Invalid value")
    assert event["metadata"]["annotations"] == {events.ANNOTATION_RULES: "DIS-2", events.ANNOTATION_USER: "alice"}
    assert formats.dns_subdomain(event["metadata"]["name"]) is None
    assert formats.qualified_name(event["reportingController"]) is None


def test_an_update_regards_the_stored_object_by_uid_and_a_bad_name_gets_a_name_of_ours():
    old = {**BAD, "metadata": {**BAD["metadata"], "uid": "1234-5678", "resourceVersion": "77"}}
    parsed, verdict = _parsed(BAD, "UPDATE", old=old)
    _, event = events.event_for(parsed, "validate", verdict, "ww-0", NOW, "abc")
    assert (event["regarding"]["uid"], event["regarding"]["resourceVersion"]) == ("1234-5678", "77")
    assert event["action"] == "Update"
    hostile = {**BAD, "metadata": {"name": "Not_A_Name" * 40, "namespace": "ml"}}
    parsed, verdict = _parsed(hostile)
    _, event = events.event_for(parsed, "validate", verdict, "ww-0", NOW, "abc")
    assert event["metadata"]["name"] == "workload-webhook.abc" and len(event["regarding"]["name"]) <= 253
    generated = {**BAD, "metadata": {"generateName": "tj-", "namespace": "ml"}}
    parsed, verdict = _parsed(generated, name="")
    _, event = events.event_for(parsed, "validate", verdict, "ww-0", NOW, "abc")
    assert event["regarding"]["name"] == "" and "a new object named tj-*" in event["note"]


def test_the_note_is_at_most_1024_bytes_whatever_the_errors():
    many = trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})
    parsed, verdict = _parsed(many, user="ü" * 600)          # two bytes a character
    verdict.errors *= 40
    _, event = events.event_for(parsed, "validate", verdict, "i" * 300, NOW, "abc")
    assert len(event["note"].encode()) <= events.NOTE_BYTES and len(event["reportingInstance"]) <= 128


def test_the_bucket_gives_burst_at_once_then_per_minute():
    now = [0.0]
    bucket = events.TokenBucket(per_minute=6, burst=3, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    now[0] += 9.9
    assert not bucket.take()
    now[0] += 0.2                                      # 10 s at 6 a minute: one token
    assert bucket.take() and not bucket.take()
    now[0] += 3600
    assert sum(bucket.take() for _ in range(10)) == 3  # never more than the burst


def test_a_clock_stepped_back_costs_the_bucket_no_tokens():
    now = [1_796_200_000.0]                            # the gang model's bucket reads wall time
    bucket = events.TokenBucket(per_minute=60, burst=2, clock=lambda: now[0])
    assert bucket.take() and bucket.take() and not bucket.take()
    now[0] -= 3600                                     # NTP steps the clock back an hour
    assert not bucket.take()
    now[0] += 1.0                                      # a second later: a token, not an hour of silence
    assert bucket.take()


def test_denials_past_the_bucket_or_a_full_queue_are_dropped_and_counted_never_waited_for():
    written, release = [], threading.Event()

    def slow(namespace, event):                        # an API server that does not answer yet
        release.wait(10)
        written.append((namespace, event["regarding"]["name"]))
    now = [0.0]
    recorder = events.Recorder(slow, per_minute=60, burst=5, instance="ww-0", queue_size=2, clock=lambda: now[0])
    parsed, verdict = _parsed(BAD)
    rate, full = _dropped("rate_limited"), _dropped("queue_full")
    for _ in range(7):
        recorder.denied(parsed, "validate", verdict)   # returns at once: the writer is stuck
    # 5 tokens: the queue holds two (and the writer one, if it took the first already), the rest
    # found the queue full; two found no token.
    assert _dropped("rate_limited") == rate + 2
    assert 2 <= _dropped("queue_full") - full <= 3
    release.set()
    recorder.stop()
    assert written and all(w == ("ml", "tj") for w in written) and len(written) <= 3


def test_a_refused_event_is_counted_and_a_dry_run_writes_none():
    def refused(namespace, event):
        raise PermissionError("403 Forbidden")
    recorder = events.Recorder(refused, per_minute=60, burst=5, instance="ww-0")
    failed = _dropped("failed")
    parsed, verdict = _parsed(BAD)
    recorder.denied(parsed, "validate", verdict)
    recorder.stop()
    assert _dropped("failed") == failed + 1
    quiet = events.Recorder(lambda n, e: pytest.fail("a dry run wrote an Event"), 60, 5, "ww-0")
    parsed, verdict = _parsed(BAD, dry_run=True)
    quiet.denied(parsed, "validate", verdict)
    assert quiet.queue.empty() and quiet._thread is None


def test_the_events_settings_default_off_and_are_bounded():
    assert from_dict({}).events.enabled is False
    cfg = from_dict({"events": {"enabled": True, "perMinute": 30, "burst": 4}})
    assert (cfg.events.enabled, cfg.events.perMinute, cfg.events.burst) == (True, 30, 4)
    for bad in ({"perMinute": 0}, {"burst": 0}, {"burst": 1001}, {"rate": 1}):
        with pytest.raises(ConfigError):
            from_dict({"events": bad})


def test_no_recorder_without_events_enabled_or_without_a_cluster():
    from webhook.view import DisabledView
    assert events.recorder(from_dict({}).events, DisabledView()) is None
    assert events.recorder(from_dict({"events": {"enabled": True}}).events, DisabledView()) is None


def test_an_event_about_an_object_is_events_k8s_io_v1_bounded_and_named_after_it():
    """The bridge's Events (webhook/bridge/loop.py) are built here and written by the one writer."""
    regarding = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "name": "train",
                 "namespace": "ml", "uid": "u-1"}
    event = events.regarding_event(regarding, "Mirrored", "é" * 2000, False, "Reconcile", "workload-webhook-bridge",
                                   "i" * 300, NOW, "abc")
    assert (event["apiVersion"], event["kind"], event["type"], event["reason"], event["action"]) == \
        ("events.k8s.io/v1", "Event", "Normal", "Mirrored", "Reconcile")
    assert event["metadata"] == {"name": "train.abc", "namespace": "ml"} and event["regarding"] == regarding
    assert len(event["note"].encode()) <= events.NOTE_BYTES and len(event["reportingInstance"]) == 128
    assert event["eventTime"].endswith("Z") and event["reportingController"] == "workload-webhook-bridge"
    odd = events.regarding_event({**regarding, "name": "Not_A_Name", "uid": None}, "X", "n", True, "A", "c", "i",
                                 NOW, "abc")
    assert odd["metadata"]["name"] == "c.abc" and "uid" not in odd["regarding"] and odd["type"] == "Warning"
