"""The certificate sync's requests through the API layer (webhook/cluster/api.py): its
Secret read, created or replaced as CERTIFICATES, the caBundles JSON-patched at the
version read, the CA ConfigMap merge-patched, and what it decides from the answers
(404: create, 409: read again and adopt, 403 on a missing Secret: what to do). The
objects are the API server's JSON (camelCase dicts). The real API server:
tests/e2e/test_certsync.py."""
from __future__ import annotations

import base64
import datetime as dt

import pytest
from kubernetes.client.rest import ApiException

from webhook.certificates import secret as secret_mod
from webhook.certificates.secret import CertSync, Policy, fresh
from webhook.cluster import api as api_mod
from tests.unit.scripted_api import Script
from webhook.cluster.api import CERTIFICATES, Api

SECRETS = "/api/v1/namespaces/ns/secrets"
SECRET = f"{SECRETS}/ww-tls"
CM = "/api/v1/namespaces/ns/configmaps/ww-ca"
ADM = "/apis/admissionregistration.k8s.io/v1"
VWC, MWC = f"{ADM}/validatingwebhookconfigurations/ww", f"{ADM}/mutatingwebhookconfigurations/ww"
POLICY = Policy(ca_validity=dt.timedelta(hours=3), leaf_validity=dt.timedelta(hours=1), grace=dt.timedelta(minutes=2))
MISSING = (404, {"kind": "Status", "code": 404})


def make(script, tmp_path, ca_configmap=None) -> CertSync:
    return CertSync(Api(script), "ns", "ww-tls", "ww", str(tmp_path / "certs"), POLICY, ca_configmap=ca_configmap)


def secret_obj(m, rv="11", annotations=None) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": m.secret_data(),
            "metadata": {"name": "ww-tls", "namespace": "ns", "resourceVersion": rv, "uid": "s-1",
                         "annotations": {**m.annotations(), **(annotations or {})}}}


def webhook_conf(bundles, rv="21") -> dict:
    return {"metadata": {"name": "ww", "resourceVersion": rv},
            "webhooks": [{"name": f"h{i}.example.com", "clientConfig": {"caBundle": b} if b else {}}
                         for i, b in enumerate(bundles)]}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_certsync_builds_its_layer_once_as_the_certificates_field_manager(tmp_path):
    script = Script({})
    sync = make(script, tmp_path)
    assert sync.api.field_manager == CERTIFICATES == "workload-webhook-certificates"
    assert len({api_mod.BRIDGE, api_mod.REGISTRAR, CERTIFICATES}) == 3      # each part says it wrote a field
    assert script.requests == []


def test_a_missing_secret_is_created_as_certificates(tmp_path):
    script = Script({("GET", SECRET): [MISSING], ("GET", VWC): [MISSING], ("GET", MWC): [MISSING],
                     ("POST", SECRETS): [(201, {})]})
    assert make(script, tmp_path).step() == "created"
    assert script.asked() == [("GET", SECRET), ("GET", VWC), ("GET", MWC), ("POST", SECRETS)]
    post = script.requests[-1]
    assert post.query == {"fieldManager": CERTIFICATES} and post.headers["Content-Type"] == "application/json"
    assert post.timeout == secret_mod.TIMEOUT
    body = post.body
    assert (body["kind"], body["type"], body["metadata"]["name"], body["metadata"]["namespace"]) == \
        ("Secret", "Opaque", "ww-tls", "ns")
    assert body["metadata"]["labels"] == {"app.kubernetes.io/name": "workload-webhook"}
    assert "annotations" not in body["metadata"]              # no rotation under way: none, as before
    assert set(body["data"]) == {"ca.crt", "ca-signing.crt", "ca.key", "tls.crt", "tls.key"}
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == base64.b64decode(body["data"]["tls.crt"])


def test_a_missing_secret_it_may_not_create_says_what_to_do(tmp_path):
    script = Script({("GET", SECRET): [MISSING], ("GET", VWC): [MISSING], ("GET", MWC): [MISSING],
                     ("POST", SECRETS): [(403, {"kind": "Status", "code": 403, "message": "forbidden"})]})
    with pytest.raises(RuntimeError, match="Secret ns/ww-tls is missing and this service may not create it; "
                                           "`helm upgrade` restores it"):
        make(script, tmp_path).step()
    assert not (tmp_path / "certs" / "tls.crt").exists()


def test_a_forbidden_replace_is_the_clients_ApiException_not_the_missing_secret_message(tmp_path):
    m = fresh(POLICY)
    stale = secret_obj(m)
    stale["data"] = {}                                        # the chart's empty Secret: to be filled
    script = Script({("GET", SECRET): [(200, stale)], ("GET", VWC): [MISSING], ("GET", MWC): [MISSING],
                     ("PUT", SECRET): [(403, {})]})
    with pytest.raises(ApiException) as exc:
        make(script, tmp_path).step()
    assert exc.value.status == 403


def test_a_create_that_lost_the_race_reads_again_and_adopts_the_winners(tmp_path):
    winner = fresh(POLICY)
    script = Script({("GET", SECRET): [MISSING, (200, secret_obj(winner))],
                     ("GET", VWC): [MISSING, MISSING], ("GET", MWC): [MISSING, MISSING],
                     ("POST", SECRETS): [(409, {"kind": "Status", "code": 409})]})
    assert make(script, tmp_path).step() is None              # nothing of its own written
    assert script.asked() == [("GET", SECRET), ("GET", VWC), ("GET", MWC), ("POST", SECRETS),
                              ("GET", SECRET), ("GET", VWC), ("GET", MWC)]
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == winner.tls_cert


def test_the_chart_made_empty_secret_is_replaced_at_its_resource_version(tmp_path):
    empty = {"metadata": {"name": "ww-tls", "namespace": "ns", "resourceVersion": "11",
                          "annotations": {"helm.sh/resource-policy": "keep"}}, "type": "Opaque"}
    script = Script({("GET", SECRET): [(200, empty)], ("GET", VWC): [MISSING], ("GET", MWC): [MISSING],
                     ("PUT", SECRET): [(200, {})]})
    assert make(script, tmp_path).step() == "issued new certificates"
    put = script.writes()[0]
    assert (put.method, put.path, put.query) == ("PUT", SECRET, {"fieldManager": CERTIFICATES})
    assert put.body["metadata"]["resourceVersion"] == "11"    # guarded: a concurrent write is a 409
    assert put.body["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}   # others' kept
    assert set(put.body["data"]) == {"ca.crt", "ca-signing.crt", "ca.key", "tls.crt", "tls.key"}


def test_a_replace_that_conflicts_reads_again(tmp_path):
    empty = {"metadata": {"name": "ww-tls", "namespace": "ns", "resourceVersion": "11"}}
    winner = fresh(POLICY)
    script = Script({("GET", SECRET): [(200, empty), (200, secret_obj(winner, rv="12"))],
                     ("GET", VWC): [MISSING, MISSING], ("GET", MWC): [MISSING, MISSING],
                     ("PUT", SECRET): [(409, {})]})
    assert make(script, tmp_path).step() is None
    assert [r.method for r in script.writes()] == ["PUT"]
    assert (tmp_path / "certs" / "tls.key").read_bytes() == winner.tls_key


def test_the_ca_bundle_is_json_patched_into_every_webhook_at_the_version_read(tmp_path):
    m = fresh(POLICY)
    script = Script({("GET", SECRET): [(200, secret_obj(m))],
                     ("GET", VWC): [(200, webhook_conf(["b2xk", None], rv="21"))],
                     ("GET", MWC): [(200, webhook_conf([b64(m.bundle)], rv="22"))],   # already carries it
                     ("PATCH", VWC): [(200, {})]})
    assert make(script, tmp_path).step() is None
    [patch] = script.writes()
    assert (patch.path, patch.query) == (VWC, {"fieldManager": CERTIFICATES})
    assert patch.headers["Content-Type"] == "application/json-patch+json" == api_mod.JSON_PATCH
    assert patch.body == [{"op": "test", "path": "/metadata/resourceVersion", "value": "21"},
                          {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": b64(m.bundle)},
                          {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": b64(m.bundle)}]


def test_the_published_bundle_is_trusted_when_starting_afresh(tmp_path):
    old = fresh(POLICY)
    script = Script({("GET", SECRET): [MISSING], ("GET", VWC): [(200, webhook_conf([b64(old.bundle)]))],
                     ("GET", MWC): [MISSING], ("POST", SECRETS): [(201, {})], ("PATCH", VWC): [(200, {})]})
    assert make(script, tmp_path).step() == "created"
    created = base64.b64decode(script.writes()[0].body["data"]["ca.crt"])
    assert old.bundle in created and created != old.bundle   # the old CA kept for a grace period
    assert script.writes()[0].body["metadata"]["annotations"][secret_mod.ANNOTATION_STAGE]


def test_a_failed_caBundle_patch_is_the_clients_ApiException(tmp_path):
    m = fresh(POLICY)
    script = Script({("GET", SECRET): [(200, secret_obj(m))], ("GET", VWC): [(200, webhook_conf(["b2xk"]))],
                     ("GET", MWC): [MISSING], ("PATCH", VWC): [(422, {"message": "test failed"})]})
    with pytest.raises(ApiException) as exc:
        make(script, tmp_path).step()
    assert exc.value.status == 422


def test_a_webhook_configuration_it_may_not_read_is_a_failure_not_absent(tmp_path):
    m = fresh(POLICY)
    script = Script({("GET", SECRET): [(200, secret_obj(m))], ("GET", VWC): [(403, {})]})
    with pytest.raises(ApiException) as exc:
        make(script, tmp_path).step()
    assert exc.value.status == 403


def test_the_ca_configmap_is_merge_patched_only_when_it_differs(tmp_path):
    m = fresh(POLICY)
    base = {("GET", SECRET): [(200, secret_obj(m))], ("GET", VWC): [MISSING], ("GET", MWC): [MISSING]}
    script = Script({**base, ("GET", CM): [(200, {"data": {"ca.crt": "old"}})], ("PATCH", CM): [(200, {})]})
    make(script, tmp_path, ca_configmap="ww-ca").step()
    [patch] = script.writes()
    assert (patch.path, patch.query, patch.body) == (CM, {"fieldManager": CERTIFICATES},
                                                     {"data": {"ca.crt": m.bundle.decode()}})
    assert patch.headers["Content-Type"] == "application/merge-patch+json" == api_mod.MERGE_PATCH
    script = Script({**base, ("GET", CM): [(200, {"data": {"ca.crt": m.bundle.decode()}})]})
    make(script, tmp_path, ca_configmap="ww-ca").step()
    assert script.writes() == []
    script = Script({**base, ("GET", CM): [MISSING]})            # the chart made none: nothing to do
    make(script, tmp_path, ca_configmap="ww-ca").step()
    assert script.writes() == [] and script.asked()[-1] == ("GET", CM)
