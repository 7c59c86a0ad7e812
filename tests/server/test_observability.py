"""Metrics and logs of the real `serve` (issue 30): a fresh /metrics lists
every series known in advance at zero, build_info and the served certificates'
expiry; denials, warnings and audits are counted by rule id, kind, operation
and action; latency by outcome; in-flight back to zero; the expiry gauges
follow rotated files; every line of the log is JSON under logFormat json
(gunicorn's own included), and denial and warn lines carry the user, the
object and the rule ids."""
from __future__ import annotations

import json
import time

import pytest
import yaml

from tests.server.harness import REPO, Server, admission_request
from tests.unit.helpers import podgroup
from webhook import config as config_mod
from webhook.certificates import expiry, files
from webhook.server import series

BAD = {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "metadata": {"name": "bad", "namespace": "ml"},
       "spec": {"replicas": 2, "scheduling": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}}
SINGLE = {**BAD, "spec": {"replicas": 2, "scheduling": {"schedulingPolicy": {"basic": {}},
                                                        "disruptionMode": {"single": {}}}}}
OVER = {**BAD, "metadata": {"name": "over", "namespace": "ml"},
        "spec": {"replicas": 2, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 5}}}}}       # POL-3


def _config(tmp_path, **extra) -> str:
    data = yaml.safe_load(open(f"{REPO}/examples/config.yaml"))
    data["enforcement"] = {"rules": {"POL-3": "warn"}}
    data.update(extra)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("observed")
    path = _config(tmp)
    with Server(str(tmp), config=path, extra=["--cluster", "disabled"]) as server:
        yield server, config_mod.load(path)


def _metrics(server) -> dict[str, float]:
    _, _, body = server.get("/metrics")
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def _name(metric, labels: tuple[str, ...]) -> str:
    """The exposition name of one series, as prometheus_client sorts its labels."""
    desc = metric._name + ("_total" if metric._type == "counter" else "")
    if metric._type == "histogram":
        desc += "_count"
    pairs = sorted(zip(metric._labelnames, labels))
    return desc + "{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}"


def test_a_fresh_metrics_page_lists_every_known_series_at_zero(served):
    server, cfg = served
    seen = _metrics(server)                 # no admission request was sent yet
    missing = [(_name(m, labels)) for m, labels in series.all_series(cfg) if _name(m, labels) not in seen]
    assert missing == []
    counted = {_name(m, labels): seen[_name(m, labels)] for m, labels in series.all_series(cfg)}
    assert not {k: v for k, v in counted.items() if v}
    assert len([k for k in seen if k.startswith("workload_webhook_violations_total{")]) == len(
        series.violation_labels(cfg))
    info = [k for k in seen if k.startswith("workload_webhook_build_info{")]
    assert len(info) == 1 and seen[info[0]] == 1 and 'gunicorn_version="' in info[0]
    served_files = expiry.Expiry(files.Paths.in_dir(server.cert_dir)).values()
    for certificate in ("serving", "ca"):
        value = seen[f'workload_webhook_certificate_expiry_timestamp_seconds{{certificate="{certificate}"}}']
        assert value == pytest.approx(served_files[certificate]) and value > time.time()


def test_denials_warnings_and_refusals_are_counted_by_rule_and_outcome(served):
    server, _ = served
    before = _metrics(server)
    server.review("/validate", admission_request(BAD, uid="deny-1"))
    server.review("/validate", admission_request(BAD, operation="UPDATE", old=SINGLE, uid="deny-2"))
    status, answer = server.review("/validate", admission_request(OVER, uid="warn-1"))
    assert answer["response"]["allowed"] is True and answer["response"]["warnings"]
    server.request("POST", "/validate", b"{not json", {"Content-Type": "application/json"})
    after = _metrics(server)

    def delta(name):
        return after.get(name, 0) - before.get(name, 0)
    v = "workload_webhook_violations_total"
    assert delta(f'{v}{{action="deny",kind="TrainJob",operation="CREATE",rule="DIS-2"}}') == 1
    assert delta(f'{v}{{action="deny",kind="TrainJob",operation="UPDATE",rule="DIS-2"}}') == 1
    assert delta(f'{v}{{action="deny",kind="TrainJob",operation="UPDATE",rule="DIS-3"}}') == 1   # a mirror's id
    assert delta(f'{v}{{action="warn",kind="TrainJob",operation="CREATE",rule="POL-3"}}') == 1
    h = "workload_webhook_request_duration_seconds_count"
    assert delta(f'{h}{{endpoint="validate",outcome="denied"}}') == 2
    assert delta(f'{h}{{endpoint="validate",outcome="allowed"}}') == 1
    assert delta(f'{h}{{endpoint="validate",outcome="refused"}}') == 1
    assert after['workload_webhook_requests_in_flight{endpoint="validate"}'] == 0
    assert delta('workload_webhook_rejected_input_total{reason="malformed"}') == 1
    assert not any(k.startswith("workload_webhook_enforced_violations_total") for k in after)   # replaced


def _lines(server, mark: str) -> list[dict]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        found = [json.loads(line) for line in server.log().splitlines() if mark in line]
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no log line with {mark!r}:\n{server.log()[-3000:]}")


def test_every_log_line_is_json_and_denials_and_warnings_name_user_object_and_rules(served):
    server, _ = served
    req = admission_request(BAD, uid="log-deny")
    req["userInfo"] = {"username": "system:serviceaccount:ml:trainer"}
    server.review("/validate", req)
    server.review("/validate", admission_request(OVER, uid="log-warn"))
    denial = _lines(server, '"log-deny"')[0]
    assert (denial["verdict"], denial["user"], denial["object"], denial["namespace"], denial["rules"]) == \
        ("denied", "system:serviceaccount:ml:trainer", "bad", "ml", ["DIS-2"])
    warn = _lines(server, '"log-warn"')[0]
    assert (warn["verdict"], warn["user"], warn["object"], warn["rules"]) == ("warn", "alice", "over", ["POL-3"])
    text = open(server.log_path, encoding="utf-8").read()
    records = [json.loads(line) for line in text.splitlines() if line.strip()]   # a plain line fails here
    messages = [r["msg"] for r in records if r["logger"] == "gunicorn.error"]
    assert any(m.startswith("Starting gunicorn") for m in messages)
    assert sum(m.startswith("Booting worker with pid") for m in messages) >= 2
    assert any(r["logger"] == "workload_webhook.certificates" for r in records)    # before gunicorn starts


def test_the_expiry_gauges_follow_certificates_rotated_on_disk(tmp_path):
    import datetime as dt
    with Server(str(tmp_path), extra=["--cluster", "disabled"]) as server:
        first = _metrics(server)['workload_webhook_certificate_expiry_timestamp_seconds{certificate="serving"}']
        files.generate(server.cert_dir, ca=files.load_ca(server.cert_dir), validity=dt.timedelta(days=3))
        rotated = _metrics(server)['workload_webhook_certificate_expiry_timestamp_seconds{certificate="serving"}']
        assert rotated == pytest.approx(time.time() + 3 * 86400, abs=300) and rotated < first


def test_gunicorn_lines_follow_the_text_format_too(tmp_path):
    with Server(str(tmp_path), extra=["--cluster", "disabled", "--log-format", "text"]) as server:
        server.review("/validate", admission_request(podgroup(schedulingPolicy={}), uid="text-uid"))
        deadline = time.monotonic() + 5
        while "text-uid" not in server.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        log = server.log()
    assert "INFO gunicorn.error: Booting worker with pid" in log and "[INFO]" not in log
    assert "uid=text-uid" in log and "user=alice" in log
