"""What an on-call engineer reads (issue 30): the rule catalogue behind the
violation metric and every error's rule id (mirrors too, their text unchanged),
the admission metrics counted once per rule and action, the series created at
start-up, build_info, the certificates' expiry gauges, and the log fields (the
user, the rule ids, gunicorn's own lines as JSON). The served metrics and logs
are proven on the real `serve` in tests/server/test_observability.py."""
from __future__ import annotations

import datetime as dt
import json
import logging
import logging.config
import os
import re

import pytest
from prometheus_client import REGISTRY

from tests.server.harness import REPO
from tests.unit.helpers import check, config, podgroup, trainjob, workload, template
from webhook import catalogue, enforcement, engine, metrics
from webhook.admission import review
from webhook.certificates import expiry, files
from webhook.server import logs, series

BAD = trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})          # DIS-2
WORSE = trainjob({"schedulingPolicy": {"gang": {"minCount": 9}}, "disruptionMode": {"single": {}, "all": {}}},
                 replicas=4)                                                                # POL-3 + DIS-1


def _doc_ids() -> set[str]:
    """Every id of docs/rules.md's table "All rules at a glance", ranges expanded."""
    text = open(os.path.join(REPO, "docs", "rules.md"), encoding="utf-8").read()
    table = text.split("## All rules at a glance", 1)[1].split("\n## ", 1)[0]
    ids = set()
    for first, last in re.findall(r"^\| \[([A-Z]+-\d+)(?:…(\d+))?\]", table, re.M):
        prefix, start = first.rsplit("-", 1)
        ids |= {f"{prefix}-{i}" for i in range(int(start), int(last or start) + 1)}
    return ids


def test_the_catalogue_is_docs_rules_md_and_its_own_rules_are_what_enforcement_relaxes():
    assert catalogue.IDS == _doc_ids()
    assert enforcement.POLICY_RULES == catalogue.OWN_POLICY
    assert {"POL-3", "DIS-2", "CON-1", "PG-2", "POD-1", "POD-3", "POD-4", "POD-5", "TGT-4", "TGT-11"} <= catalogue.OWN_POLICY


@pytest.mark.parametrize("obj,old,mirror", [
    (podgroup(schedulingPolicy={}), None, "POL-1"),
    (podgroup(schedulingPolicy={"gang": {"minCount": 0}}), None, "POL-2"),
    (podgroup(schedulingPolicy={"basic": {}}), podgroup(), "POL-4"),
    (trainjob({"disruptionMode": {"single": {}, "all": {}}}), None, "DIS-1"),
    (podgroup(disruptionMode={"all": {}}), podgroup(), "DIS-3"),
    (trainjob({"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}}), None, "CON-1"),
    (trainjob({"resourceClaims": [{"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}]}),
     None, "CLM-1"),
    (workload([template("a"), template("a")]), None, "WL-1"),
    (podgroup(status=None, preemptionPolicy="Never"), None, None),      # the gate is on in this config
    (trainjob({"schedulingPolicy": "gang"}), None, "TGT-2"),
], ids=["POL-1", "POL-2", "POL-4", "DIS-1", "DIS-3", "CON-1", "CLM-1", "WL-1", "no error", "TGT-2"])
def test_mirror_errors_carry_their_catalogue_id_in_the_metric_and_log_never_in_their_text(obj, old, mirror):
    v = check(obj, old)
    if mirror is None:
        assert v.errors == []
        return
    assert v.errors and {e.id for e in v.errors} == {mirror}, [(str(e), e.id) for e in v.errors]
    for e in v.errors:
        assert e.rule is None and f"({mirror})" not in str(e)       # the API server's text, relaxable by nothing


def test_a_gated_field_is_WL_2_and_an_own_rule_keeps_its_id():
    v = check(podgroup(preemptionPolicy="Never"), cfg=config(featureGates={"PodGroupPreemptionPolicy": False}))
    assert [e.id for e in v.errors] == ["WL-2"]
    assert [e.id for e in check(BAD).errors] == ["DIS-2"] and check(BAD).errors[0].rule == "DIS-2"


def _sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_violations_count_once_per_rule_and_action_of_a_request():
    recorder = metrics.AdmissionMetrics()
    cfg = config(enforcement={"rules": {"POL-3": "warn"}})
    verdict = engine.validate(engine.Request.for_object(WORSE), cfg)       # DIS-1 denied, POL-3 warned
    assert [e.id for e in verdict.errors] == ["DIS-1"] and [e.id for e in verdict.warned] == ["POL-3"]
    name = "workload_webhook_violations_total"
    deny = {"rule": "DIS-1", "kind": "TrainJob", "operation": "CREATE", "action": "deny"}
    warn = {**deny, "rule": "POL-3", "action": "warn"}
    before = _sample(name, **deny), _sample(name, **warn)
    two = engine.Verdict(errors=verdict.errors * 2, warned=verdict.warned)   # two fields, one rule: counted once
    recorder.answered("validate", "TrainJob", "CREATE", "denied", 0.002, two)
    assert (_sample(name, **deny), _sample(name, **warn)) == (before[0] + 1, before[1] + 1)
    bad_name = check({**podgroup(), "metadata": {"name": "Bad", "namespace": "ml"}}).errors   # no rule names it
    assert [e.id for e in bad_name] == [None]
    unnamed = engine.Verdict(errors=bad_name)
    none = {**deny, "rule": "none", "kind": "PodGroup"}
    was = _sample(name, **none)
    recorder.answered("validate", "PodGroup", "CREATE", "denied", 0.002, unnamed)
    assert _sample(name, **none) == was + 1


def test_latency_has_the_outcome_and_in_flight_one_series_per_endpoint():
    recorder = metrics.AdmissionMetrics()
    labels = {"endpoint": "mutate", "outcome": "refused"}
    before = _sample("workload_webhook_request_duration_seconds_count", **labels)
    recorder.observe("mutate", "refused", 0.0001)
    assert _sample("workload_webhook_request_duration_seconds_count", **labels) == before + 1
    assert set(recorder.in_flight) == {"validate", "mutate"}


def test_series_at_start_up_cover_each_judged_kind_rule_and_action():
    cfg = config(profiles=["jobset"])
    labels = series.violation_labels(cfg)
    kinds_ = {k for _, k, _, _ in labels}
    assert kinds_ == {"Workload", "PodGroup", "CompositePodGroup", "Pod", "TrainJob", "GroupJob", "JobSet"}
    assert ("DIS-2", "TrainJob", "UPDATE", "audit") in labels and ("JS-3", "JobSet", "CREATE", "deny") in labels
    assert ("POD-5", "Pod", "CREATE", "warn") in labels and ("none", "Pod", "CREATE", "deny") in labels
    assert ("DIS-1", "TrainJob", "CREATE", "warn") not in labels          # a mirror is never relaxed
    assert not any(k == "Pod" and op == "UPDATE" for _, k, op, _ in labels)
    assert not any(r in ("JS-1", "LWS-1") and k == "TrainJob" for r, k, _, _ in labels)
    assert not any(r.startswith(("ADM-", "DEF-")) or r in ("POD-2", "TGT-1") for r, _, _, _ in labels)
    requests = {lab for m, lab in series.all_series(cfg) if m is metrics.REQUESTS}
    assert ("mutate", "Pod", "CREATE", "patched") in requests and ("validate", "JobSet", "UPDATE", "denied") in requests
    assert not any(ep == "validate" and k == "Pod" for ep, k, _, _ in requests)     # pods.validation: policy
    assert len(series.all_series(cfg)) < 800           # bounded by the config, not by what clients send


def test_build_info_is_rendered_once_with_the_versions():
    text = metrics.render()[0].decode()
    lines = [line for line in text.splitlines() if line.startswith("workload_webhook_build_info{")]
    assert len(lines) == 1 and lines[0].endswith(" 1.0") and 'version="' in lines[0]
    assert 'python_version="3.' in lines[0] and 'gunicorn_version="' in lines[0]


def test_certificate_expiry_follows_the_files(tmp_path):
    paths = files.generate(str(tmp_path), validity=dt.timedelta(days=30), ca_validity=dt.timedelta(days=400))
    collector = expiry.Expiry(paths)
    first = collector.values()
    now = dt.datetime.now(dt.timezone.utc).timestamp()
    assert abs(first["serving"] - (now + 30 * 86400)) < 120 and abs(first["ca"] - (now + 400 * 86400)) < 120
    files.generate(str(tmp_path), ca=files.load_ca(str(tmp_path)), validity=dt.timedelta(days=10))
    assert abs(collector.values()["serving"] - (now + 10 * 86400)) < 120      # a rotated file, read again
    family = next(iter(collector.collect()))
    assert {s.labels["certificate"] for s in family.samples} == {"serving", "ca"}
    os.unlink(paths.ca_cert)
    assert set(collector.values()) == {"serving"}                              # no file, no series


def test_the_ca_is_the_serving_certificates_issuer_in_a_rotated_bundle(tmp_path):
    old_ca, _ = files.make_ca(validity=dt.timedelta(days=5))
    new_ca, new_key = files.make_ca(common_name="new CA", validity=dt.timedelta(days=900))
    leaf, _ = files.make_serving(new_ca, new_key)
    values = expiry.not_after([leaf], [old_ca, new_ca])
    assert values["ca"] == new_ca.not_valid_after_utc.timestamp()
    assert expiry.not_after([], [old_ca, new_ca]) == {"ca": old_ca.not_valid_after_utc.timestamp()}


def _review(obj, user="alice"):
    req = {"uid": "u1", "kind": {"group": "training.example.com", "version": "v1alpha1", "kind": obj["kind"]},
           "operation": "CREATE", "namespace": "ml", "name": obj["metadata"]["name"], "object": obj,
           "userInfo": {"username": user, "groups": ["system:authenticated"]}}
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}).encode()
    return review.parse(body, "application/json")


def test_the_requesting_user_is_read_and_a_strange_userinfo_is_no_user():
    assert _review(BAD).user == "alice"
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "u", "kind": {"version": "v1", "kind": "Pod"}, "operation": "CREATE",
                                   "userInfo": {"username": 7}}}).encode()
    assert review.parse(body, "application/json").user == ""


def test_denial_and_warn_lines_carry_the_user_the_object_and_the_rule_ids():
    parsed = _review(WORSE, user="x" * 1000)
    verdict = engine.validate(parsed.request, config(enforcement={"rules": {"POL-3": "warn"}}))
    fields = logs.request_fields(parsed, "validate", "denied", 0.001, verdict)
    assert fields["rules"] == ["DIS-1"] and fields["object"] == "tj" and fields["namespace"] == "ml"
    assert len(fields["user"]) <= logs.MAX_FIELD_CHARS
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(json.loads(logs.JsonFormatter().format(record)))
    log = logging.getLogger("test.enforced")
    log.addHandler(Keep())
    log.setLevel("INFO")
    logs.enforced(log, _review(WORSE), "validate", verdict)
    assert [(r["verdict"], r["rules"], r["user"], r["object"]) for r in records] == [("warn", ["POL-3"], "alice", "tj")]


def test_gunicorn_lines_go_through_the_json_formatter(capsys):
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        logging.config.dictConfig(logs.gunicorn_logconfig("info", "json"))
        logging.getLogger("gunicorn.error").info("Booting worker with pid: %s", 42)
        line = capsys.readouterr().err.strip().splitlines()[-1]
        assert json.loads(line)["msg"] == "Booting worker with pid: 42"
        assert json.loads(line)["logger"] == "gunicorn.error"
        logging.config.dictConfig(logs.gunicorn_logconfig("info", "text"))
        logging.getLogger("gunicorn.error").warning("Worker timeout")
        assert "WARNING gunicorn.error: Worker timeout" in capsys.readouterr().err
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])


def test_the_operators_rules_of_the_profiles_carry_their_ids_never_in_their_text():
    """JS-n and LWS-n (each check's `rule` in webhook/profiles/*.yaml): every error of the
    operator-rule cases names a rule, and each of the twelve is found under its own id."""
    from tests.unit import test_operator_rules as cases
    found = set()
    judged = [(c[1], None) for c in cases.JOBSET + cases.LWS] + [(c[1], c[2]) for c in
                                                                   cases.JOBSET_UPDATES + cases.LWS_UPDATES]
    for obj, old in judged:
        for e in engine.validate(engine.Request.for_object(obj, old), cases.CFG).errors:
            assert e.id is not None, str(e)
            if e.id.startswith(("JS-", "LWS-")):
                assert e.rule is None and f"({e.id})" not in str(e)
                found.add(e.id)
    assert found == {f"JS-{i}" for i in range(1, 7)} | {f"LWS-{i}" for i in range(1, 7)}


def test_a_configured_check_may_name_its_rule_and_a_bad_id_is_refused():
    from webhook.config import ConfigError, from_dict
    target = {"group": "x.example.com", "kind": "X", "groups": [{"at": "spec.scheduling"}],
              "checks": {"refuse": [{"path": "spec.forbidden", "message": "no", "rule": "X-1"}]}}
    obj = {"apiVersion": "x.example.com/v1", "kind": "X", "metadata": {"name": "x", "namespace": "ml"},
           "spec": {"forbidden": 1}}
    [error] = engine.validate(engine.Request.for_object(obj), from_dict({"targets": [target]})).errors
    assert (error.id, str(error)) == ("X-1", "spec.forbidden: Forbidden: no")
    target["checks"]["refuse"][0]["rule"] = "not an id"
    with pytest.raises(ConfigError):
        from_dict({"targets": [target]})


def test_the_bridges_pod_rules_are_created_only_with_the_bridge_on():
    off = series.violation_labels(config())
    on = series.violation_labels(config(bridge={"coscheduling": True}))
    assert not any(r.startswith("BRG-") for r, _, _, _ in off)
    assert {("BRG-2", "Pod", "CREATE", a) for a in ("deny", "warn", "audit")} <= on
