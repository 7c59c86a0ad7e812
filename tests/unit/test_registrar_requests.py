"""The registrar's requests through the API layer (webhook/cluster/api.py): the paths and
methods it asks, the fieldManager of its writes, the EndpointSlice LIST page by page, and
what it decides from the answers (404: create, 409: read again, 403: the release decides).
The objects are the API server's JSON (camelCase dicts). The real API server:
tests/e2e/test_registration.py."""
from __future__ import annotations


import pytest
from kubernetes.client.rest import ApiException

from webhook.cluster import registrar
from tests.unit.scripted_api import Script
from webhook.cluster.api import REGISTRAR, Api

ADM = "/apis/admissionregistration.k8s.io/v1"
VWC, MWC = f"{ADM}/validatingwebhookconfigurations", f"{ADM}/mutatingwebhookconfigurations"
POD = "/api/v1/namespaces/ns/pods/p-1"
RS = "/apis/apps/v1/namespaces/ns/replicasets/rs-1"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices"
ROLE = "/apis/rbac.authorization.k8s.io/v1/clusterroles/owner"
NAME = "r-workload-webhook"


def manifest(kind="ValidatingWebhookConfiguration"):
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": NAME},
            "webhooks": [{"name": "a.example.com", "sideEffects": "None",
                          "clientConfig": {"service": {"namespace": "ns", "name": "svc", "path": "/v"}}}]}


def stored(release: int, rv: str = "7", uid: str = "u-1") -> dict:
    out = manifest()
    out["metadata"].update(resourceVersion=rv, annotations=registrar.Revision(release).annotations(),
                           ownerReferences=[{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                             "name": "owner", "uid": uid}])
    out["webhooks"][0]["clientConfig"]["caBundle"] = "Q0E="
    return out


def make(script: Script, tmp_path, manifests=None, release=2, service="ns/svc", pod_ip="10.0.0.5"):
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"CA")
    reg = registrar.Registrar(Api(script), manifests or [manifest()], release, "owner", service, pod_ip,
                              "https://127.0.0.1:1/readyz", str(ca), pod=("ns", "p-1"))
    reg._ready_here = lambda: True          # its own /readyz over loopback: not the API server
    return reg


POD_OBJ = {"metadata": {"name": "p-1", "ownerReferences": [
    {"kind": "ReplicaSet", "name": "rs-0", "controller": False},
    {"kind": "ReplicaSet", "name": "rs-1", "controller": True}]}}
RS_OBJ = {"metadata": {"name": "rs-1", "annotations": {registrar.RS_REVISION: "4"}}}


def slice_page(ips, token=None):
    return {"items": [{"endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips]}],
            "metadata": {"continue": token} if token else {}}


def test_the_registrar_builds_its_layer_once_as_the_registrar():
    script = Script({})
    reg = registrar.Registrar(Api(script), [manifest()], 1, "owner", None, None, "https://x/readyz", "/nope")
    assert reg.api.field_manager == REGISTRAR and reg.api.transport is script
    assert script.requests == []            # nothing asked before the first step


def test_a_first_registration_reads_then_creates_each_configuration_as_the_registrar(tmp_path):
    script = Script({
        ("GET", POD): [(200, POD_OBJ)], ("GET", RS): [(200, RS_OBJ)],
        ("GET", SLICES): [(200, slice_page(["10.0.0.5"]))],
        ("GET", ROLE): [(200, {"metadata": {"name": "owner", "uid": "u-1"}})],
        ("GET", f"{VWC}/{NAME}"): [(404, {"kind": "Status", "code": 404})],
        ("POST", VWC): [(201, {})],
        ("GET", f"{MWC}/{NAME}"): [(404, {"kind": "Status", "code": 404})],
        ("POST", MWC): [(201, {})],
    })
    reg = make(script, tmp_path, [manifest(), manifest("MutatingWebhookConfiguration")])
    step = reg.step()
    assert step.text == ("registered ValidatingWebhookConfiguration, MutatingWebhookConfiguration "
                         "(revision 2, rollout 4)"), step
    assert script.asked() == [("GET", POD), ("GET", RS), ("GET", SLICES), ("GET", ROLE),
                              ("GET", f"{VWC}/{NAME}"), ("POST", VWC), ("GET", f"{MWC}/{NAME}"), ("POST", MWC)]
    for r in script.requests:               # every write names the registrar, no read does
        assert r.query.get("fieldManager") == (REGISTRAR if r.method == "POST" else None), r
        assert r.timeout == registrar.TIMEOUT
    created = script.requests[5].body
    assert created["metadata"]["annotations"] == {registrar.ANNOTATION_REVISION: "2",
                                                  registrar.ANNOTATION_ROLLOUT: "4"}
    assert created["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert created["webhooks"][0]["clientConfig"]["caBundle"] == "Q0E="      # base64 of the CA file
    assert script.requests[5].headers["Content-Type"] == "application/json"
    assert reg.registered


def test_an_older_registration_is_replaced_at_its_resource_version(tmp_path):
    script = Script({("GET", f"{VWC}/{NAME}"): [(200, stored(1, rv="7"))], ("PUT", f"{VWC}/{NAME}"): [(200, {})]})
    reg = make(script, tmp_path)
    assert reg._write(manifest(), {"name": "owner", "uid": "u-1"}, b"CA") is True
    put = script.requests[-1]
    assert (put.method, put.query) == ("PUT", {"fieldManager": REGISTRAR})
    assert put.body["metadata"]["resourceVersion"] == "7"
    assert put.body["webhooks"][0]["clientConfig"]["caBundle"] == "Q0E="       # the registered one kept


def test_a_conflict_reads_again_and_writes_over_what_it_read_then(tmp_path):
    script = Script({("GET", f"{VWC}/{NAME}"): [(200, stored(1, rv="7")), (200, stored(1, rv="8"))],
                     ("PUT", f"{VWC}/{NAME}"): [(409, {"kind": "Status", "code": 409}), (200, {})]})
    reg = make(script, tmp_path)
    assert reg._write(manifest(), {"name": "owner", "uid": "u-1"}, b"CA") is True
    assert script.asked() == [("GET", f"{VWC}/{NAME}"), ("PUT", f"{VWC}/{NAME}")] * 2
    assert [r.body["metadata"]["resourceVersion"] for r in script.requests if r.method == "PUT"] == ["7", "8"]


def test_a_newer_registration_is_left_alone_and_a_conflict_that_never_ends_is_said(tmp_path):
    script = Script({("GET", f"{VWC}/{NAME}"): [(200, stored(5))]})
    assert make(script, tmp_path)._write(manifest(), {"name": "owner", "uid": "u-1"}, b"CA") is False
    assert script.asked() == [("GET", f"{VWC}/{NAME}")]
    script = Script({("GET", f"{VWC}/{NAME}"): [(404, {})] * 5, ("POST", VWC): [(409, {})] * 5})
    with pytest.raises(RuntimeError, match="kept changing under us"):
        make(script, tmp_path)._write(manifest(), {"name": "owner", "uid": "u-1"}, b"CA")


def test_any_other_failure_of_a_write_is_the_clients_ApiException(tmp_path):
    script = Script({("GET", f"{VWC}/{NAME}"): [(404, {})], ("POST", VWC): [(403, {"message": "forbidden"})]})
    with pytest.raises(ApiException) as exc:
        make(script, tmp_path)._write(manifest(), {"name": "owner", "uid": "u-1"}, b"CA")
    assert exc.value.status == 403


def test_the_endpoint_slices_are_listed_page_by_page(tmp_path):
    script = Script({("GET", SLICES): [(200, slice_page(["10.0.0.9"], token="t1")),
                                       (200, slice_page(["10.0.0.5"]))]})
    reg = make(script, tmp_path)
    assert reg._ready_in_service() is True                   # this Pod is on the second page
    assert [r.query for r in script.requests] == [
        {"labelSelector": "kubernetes.io/service-name=svc", "limit": 500},
        {"labelSelector": "kubernetes.io/service-name=svc", "limit": 500, "continue": "t1"}]
    assert {r.timeout for r in script.requests} == {registrar.TIMEOUT}
    script = Script({("GET", SLICES): [(200, slice_page(["10.0.0.9"]))]})
    assert make(script, tmp_path)._ready_in_service() is False
    script = Script({("GET", SLICES): [(403, {})]})
    with pytest.raises(ApiException):
        make(script, tmp_path)._ready_in_service()


def test_the_rollout_revision_is_read_from_the_pods_controller_once_found(tmp_path):
    script = Script({("GET", POD): [(200, POD_OBJ)], ("GET", RS): [(200, RS_OBJ), (200, RS_OBJ)]})
    reg = make(script, tmp_path)
    assert reg._rollout() == 4 and reg._rollout() == 4
    assert script.asked() == [("GET", POD), ("GET", RS), ("GET", RS)]    # the Pod read once


@pytest.mark.parametrize("status", [403, 404])
def test_a_rollout_revision_it_may_not_or_cannot_read_leaves_the_release_to_decide(tmp_path, status):
    script = Script({("GET", POD): [(status, {})]})
    assert make(script, tmp_path)._rollout() is None
    script = Script({("GET", POD): [(200, POD_OBJ)], ("GET", RS): [(status, {})]})
    assert make(script, tmp_path)._rollout() is None
    script = Script({("GET", POD): [(500, {})]})
    with pytest.raises(ApiException):
        make(script, tmp_path)._rollout()


def test_a_pod_without_a_replicaset_reads_none(tmp_path):
    script = Script({("GET", POD): [(200, {"metadata": {"name": "p-1"}})]})
    reg = make(script, tmp_path)
    assert reg._rollout() is None and reg._rollout() is None
    assert script.asked() == [("GET", POD)]


def test_the_owner_gone_registers_nothing(tmp_path):
    script = Script({("GET", POD): [(404, {})], ("GET", SLICES): [(200, slice_page(["10.0.0.5"]))],
                     ("GET", ROLE): [(404, {})]})
    step = make(script, tmp_path).step()
    assert step.text == "not registering: the owner ClusterRole owner is gone (uninstalled)"
    assert not any(r.method in ("POST", "PUT") for r in script.requests)


def test_the_registered_revisions_none_while_one_is_missing(tmp_path):
    script = Script({("GET", f"{VWC}/{NAME}"): [(200, stored(3))], ("GET", f"{MWC}/{NAME}"): [(404, {})]})
    reg = make(script, tmp_path, [manifest(), manifest("MutatingWebhookConfiguration")])
    assert reg._registered_revisions() is None
    script = Script({("GET", f"{VWC}/{NAME}"): [(200, stored(3))]})
    assert make(script, tmp_path)._registered_revisions() == [registrar.Revision(3)]
