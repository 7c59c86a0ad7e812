"""The admission protocol (ADM-1..7) over real HTTPS against the real
`workload-webhook serve` (gunicorn, TLS)."""
import base64
import json
import socket
import ssl
import time

import jsonpatch
import pytest

from tests.server.harness import admission_request
from tests.unit.helpers import pod, podgroup, trainjob

LABEL = "scheduling.k8s.io/pod-group"


def test_ADM_1_echo_uid_apiversion_kind(server):
    status, body = server.review("/validate", admission_request(podgroup(), uid="abc-123"))
    assert status == 200
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == "abc-123" and body["response"]["allowed"] is True


def test_ADM_2_denial_shape(server):
    obj = trainjob({"schedulingPolicy": {"gang": {"minCount": 9}}, "disruptionMode": {}}, replicas=4)
    status, body = server.review("/validate", admission_request(obj))
    r = body["response"]
    assert status == 200 and r["allowed"] is False
    st = r["status"]
    assert st["code"] == 422 and st["reason"] == "Invalid"
    assert (st["details"]["kind"], st["details"]["group"], st["details"]["name"]) == ("TrainJob", "training.example.com", "tj")
    causes = {(c["field"], c["reason"]) for c in st["details"]["causes"]}
    assert causes == {("spec.scheduling.disruptionMode", "FieldValueInvalid"),
                      ("spec.scheduling.schedulingPolicy.gang.minCount", "FieldValueInvalid")}
    assert st["message"].count("; ") == 1
    assert "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 9: must be less than or equal to spec.replicas (4)" \
        in st["message"]
    assert all(c["message"].startswith("Invalid value") for c in st["details"]["causes"])


def test_ADM_2_required_reason(server):
    _, body = server.review("/validate", admission_request(podgroup(schedulingPolicy={"gang": {"minCount": 0}})))
    assert body["response"]["status"]["details"]["causes"] == [
        {"field": "spec.schedulingPolicy.gang.minCount", "reason": "FieldValueRequired", "message": "Required value"}]


def test_ADM_3_patch_is_base64_json_patch(server):
    p = pod({LABEL: "pg"})
    _, body = server.review("/mutate", admission_request(p))
    r = body["response"]
    assert r["allowed"] is True and r["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(r["patch"]))
    out = jsonpatch.apply_patch(p, ops)
    assert out["spec"]["schedulingGroup"] == {"podGroupName": "pg"}
    # Mutating the mutated pod: no patch at all (POD-6, the API server may call twice).
    _, again = server.review("/mutate", admission_request(out))
    assert "patch" not in again["response"] and "patchType" not in again["response"]


def test_ADM_3_no_patch_when_nothing_changes(server):
    _, body = server.review("/mutate", admission_request(pod({"app": "web"})))
    assert body["response"] == {"uid": "uid-1", "allowed": True}


def test_ADM_3_crd_defaulting(server):
    _, body = server.review("/mutate", admission_request(trainjob({"schedulingPolicy": {"gang": {}}}, replicas=5)))
    ops = json.loads(base64.b64decode(body["response"]["patch"]))
    assert ops == [{"op": "add", "path": "/spec/scheduling/schedulingPolicy/gang/minCount", "value": 5}]


@pytest.mark.parametrize("path,obj", [
    ("/validate", trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})),
    ("/mutate", pod({LABEL: "pg"})),
    ("/validate", podgroup()),
])
def test_ADM_4_dry_run_same_answer(server, path, obj):
    _, wet = server.review(path, admission_request(obj, dry_run=False))
    _, dry = server.review(path, admission_request(obj, dry_run=True))
    assert wet == dry


def test_ADM_5_warnings_short_and_prefixed(server):
    name = "x" * 200
    _, body = server.review("/mutate", admission_request(pod(None, schedulingGroup={"podGroupName": name})))
    warnings = body["response"]["warnings"]
    assert warnings and all(len(w) <= 120 for w in warnings)
    assert all(w.startswith(("spec.", "metadata.")) for w in warnings)


def test_ADM_7_health_ready_metrics(server):
    assert server.get("/healthz")[0] == 200
    status, _, body = server.get("/readyz")
    assert status == 200 and json.loads(body) == {"ready": True, "config": "loaded", "certificates": "loaded",
                                                  "cluster": "disabled"}
    server.review("/validate", admission_request(podgroup(schedulingPolicy={})))
    status, headers, body = server.get("/metrics")
    text = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    line = next(l for l in text.splitlines() if l.startswith("workload_webhook_requests_total{")
                and 'verdict="denied"' in l and 'kind="PodGroup"' in l)
    assert float(line.rsplit(" ", 1)[1]) >= 1
    assert "workload_webhook_request_duration_seconds_bucket" in text


# --- ADM-6: malformed and hostile input gets a one-line 4xx, never a 500
def raw(server, body, ctype="application/json", path="/validate"):
    headers = {"Content-Type": ctype} if ctype else {}
    status, _, data = server.request("POST", path, body, headers)
    return status, data


@pytest.mark.parametrize("body,ctype,status,phrase", [
    (b"{not json", "application/json", 400, "not valid JSON"),
    (b"", "application/json", 400, "not valid JSON"),
    (b"[1,2]", "application/json", 400, "JSON object"),
    (b'{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}', "application/json",
     400, "admission.k8s.io/v1"),
    (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}', "application/json", 400, "request must be"),
    (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"kind":{"version":"v1","kind":"Pod"},'
     b'"operation":"CREATE"}}', "application/json", 400, "request.uid"),
    (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"version":"v1",'
     b'"kind":"Pod"},"operation":"PATCH"}}', "application/json", 400, "operation"),
    (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":"Pod","operation":"CREATE"}}',
     "application/json", 400, "request.kind"),
    (b"{}", "text/plain", 400, "Content-Type"),
    (b"{}", None, 400, "Content-Type"),
    (b"\xff\xfe\x00garbage", "application/json", 400, "not valid JSON"),
], ids=["not json", "empty", "array", "v1beta1", "no request", "no uid", "bad operation", "kind string",
        "text/plain", "no content type", "binary"])
def test_ADM_6_malformed(server, body, ctype, status, phrase):
    got, data = raw(server, body, ctype)
    assert got == status
    assert b"\n" not in data.strip() and phrase in json.loads(data)["error"]


def test_ADM_6_deeply_nested(server):
    deep = b'{"a":' * 5000 + b"1" + b"}" * 5000
    body = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":' + deep + b"}"
    status, data = raw(server, body)
    assert status == 400 and "nested" in json.loads(data)["error"]
    hundred = {"x": 1}
    for _ in range(150):
        hundred = {"x": hundred}
    status, data = raw(server, json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                           "request": {"uid": "u", "object": hundred}}).encode())
    assert status == 400 and "nested" in json.loads(data)["error"]


def test_ADM_6_body_over_limit(server):
    big = json.dumps(admission_request(podgroup()))[:-1] + ', "pad": "' + "x" * 1_100_000 + '"}'
    body = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":' + big.encode() + b"}"
    status, data = raw(server, body)
    assert status == 413 and "larger than 1048576 bytes" in json.loads(data)["error"]


def test_ADM_6_unknown_kind_allowed_and_delete_allowed(server):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    _, body = server.review("/validate", admission_request(cm))
    assert body["response"] == {"uid": "uid-1", "allowed": True}
    bad = podgroup(schedulingPolicy={})
    _, body = server.review("/validate", admission_request(bad, operation="DELETE"))
    assert body["response"]["allowed"] is True


def test_ADM_6_object_of_wrong_type_is_a_denial(server):
    req = admission_request(podgroup())
    req["object"] = "not an object"
    status, body = server.review("/validate", req)
    assert status == 200 and body["response"]["allowed"] is False
    st = body["response"]["status"]
    assert (st["code"], st["reason"]) == (422, "Invalid")
    assert st["details"]["causes"][0]["reason"] == "FieldValueInvalid"


def test_ADM_6_wrong_method_and_path(server):
    assert server.get("/validate")[0] == 405
    status, _, data = server.get("/nope")
    assert status == 404 and b"Traceback" not in data


def test_tls_1_2_minimum_and_keep_alive(server):
    # A client that would speak TLS 1.0/1.1 (and accepts legacy ciphers, so only the
    # server's floor can stop it) is refused by the server (the event loop's TLS closes
    # the connection without flushing OpenSSL's protocol-version alert, so the client
    # may see either the alert or an EOF in the handshake).
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.check_hostname, old.verify_mode = False, ssl.CERT_NONE
    old.set_ciphers("DEFAULT:@SECLEVEL=0")
    with pytest.warns(DeprecationWarning):
        old.minimum_version, old.maximum_version = ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    with pytest.raises(ssl.SSLError) as refused:
        old.wrap_socket(raw, server_hostname="localhost")
    raw.close()
    assert any(word in str(refused.value).upper() for word in ("VERSION", "EOF")), refused.value
    conn = server.connection(maximum_version=ssl.TLSVersion.TLSv1_2)
    conn.connect()
    assert conn.sock.version() == "TLSv1.2"
    local = conn.sock.getsockname()
    for _ in range(5):  # five requests, one TCP connection
        status, _ = server.review("/validate", admission_request(podgroup()), conn=conn)
        assert status == 200
        assert conn.sock.getsockname() == local
    conn.close()


def test_hostile_kinds_do_not_grow_metric_labels(server):
    for i in range(5):
        req = admission_request(podgroup())
        req["kind"]["kind"] = f"Junk{i}"
        server.review("/validate", req)
    _, _, body = server.get("/metrics")
    assert b"Junk" not in body and b'kind="other"' in body


def test_logs_are_json_without_bodies(server):
    server.review("/validate", admission_request(podgroup(schedulingPolicy={}), uid="log-probe-uid"))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = [l for l in server.log().splitlines() if "log-probe-uid" in l]
        if lines:
            break
        time.sleep(0.1)
    record = json.loads(lines[0])
    assert record["uid"] == "log-probe-uid" and record["verdict"] == "denied" and record["kind"].endswith("PodGroup")
    assert "latency_ms" in record and "schedulingPolicy\": {" not in lines[0]
