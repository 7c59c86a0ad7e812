"""The service's writes name a field manager of their own (webhook/cluster/api.py):
the bridge's (its mirrors, their status, its Lease, its Events) and the registrar's
(the webhook configurations), so managedFields and `explain` say who wrote a field.
The real API server's managedFields: tests/e2e/test_field_managers.py."""

from tests.unit.scripted_api import Recorder
from webhook.bridge.lease import Lease
from webhook.cluster import api as api_mod
from webhook.cluster.api import BRIDGE, REGISTRAR, Api


def test_every_write_names_the_layers_field_manager_and_no_read_does():
    transport = Recorder()
    layer = Api(transport, field_manager=BRIDGE)
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        layer.call(method, "/api/v1/namespaces/ml/configmaps/x", body=None if method in ("GET", "DELETE") else {})
    assert [(m, q.get("fieldManager")) for m, q in transport.requests] == [
        ("GET", None), ("POST", BRIDGE), ("PUT", BRIDGE), ("PATCH", BRIDGE), ("DELETE", None)]


def test_without_one_the_api_server_chooses_and_a_query_of_the_callers_own_wins():
    transport = Recorder()
    Api(transport).call("POST", "/api/v1/namespaces/ml/configmaps", body={})
    Api(transport, field_manager=BRIDGE).call("POST", "/x", {"fieldManager": "mine"}, body={})
    assert [q.get("fieldManager") for _, q in transport.requests] == [None, "mine"]


def test_of_gives_an_existing_layer_the_manager_and_leaves_the_original_alone():
    plain = Api(Recorder())
    managed = Api.of(plain, field_manager=REGISTRAR)
    assert managed.field_manager == REGISTRAR and plain.field_manager is None
    assert Api.of(managed) is managed and managed.transport is plain.transport


def test_the_bridges_lease_is_written_as_the_bridge():
    transport = Recorder(404, 201)             # no Lease yet: GET 404, then the create
    lease = Lease(Api(transport), "ww", "bridge", "me")
    assert lease.try_hold()
    assert transport.requests[0] == ("GET", {}) and transport.requests[1] == ("POST", {"fieldManager": BRIDGE})


def test_the_names_are_the_services_own():
    assert (api_mod.BRIDGE, api_mod.REGISTRAR) == ("workload-webhook-bridge", "workload-webhook-registrar")
