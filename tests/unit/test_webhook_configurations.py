"""`check` and the registrar read the same two configurations and the same
ready-endpoint rule (webhook/cluster/webhook_configurations.py): an endpoint the
registrar waits to be is one `check` sends its probe to, and no other."""
import pytest

from webhook.cluster import registrar, webhook_configurations as wc
from webhook.commands import check

SLICES = [
    {"ports": [{"name": "https", "port": 8443}],
     "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": True}},
                   {"addresses": ["10.1.0.6"], "conditions": {"ready": False}},
                   {"addresses": ["10.1.0.7"], "conditions": {}},            # unset: ready
                   {"addresses": ["10.1.0.8"]}]},
    {"ports": [{"name": "metrics", "port": 9090}],                          # not the Service's port
     "endpoints": [{"addresses": ["10.1.0.9"], "conditions": {"ready": True}}]},
]


def test_both_name_the_same_two_kinds():
    assert registrar.KINDS is wc.KINDS == ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    assert not hasattr(check, "KINDS")         # check reads them from the one definition
    assert set(wc.PLURALS) == set(wc.KINDS) and all(p == k.lower() + "s" for k, p in wc.PLURALS.items())


def test_the_ready_endpoints_are_those_the_registrar_waits_for():
    served = wc.ready_endpoints(SLICES, "https")
    assert [a for a, port in served if port] == ["10.1.0.5", "10.1.0.7", "10.1.0.8"]
    assert ("10.1.0.9", None) in served        # ready, but the slice does not serve the Service's port
    for address in ("10.1.0.5", "10.1.0.6", "10.1.0.7", "10.1.0.8", "10.1.0.9", "10.1.0.10"):
        assert registrar.endpoint_ready(SLICES, address) is any(a == address for a, _ in served)


@pytest.mark.parametrize("port_name, expected", [(None, [("10.2.0.1", 443)]), ("https", [("10.2.0.1", None)])])
def test_an_unnamed_service_port_matches_the_slices_unnamed_port(port_name, expected):
    slices = [{"ports": [{"port": 443}], "endpoints": [{"addresses": ["10.2.0.1"]}]}]
    assert wc.ready_endpoints(slices, port_name) == expected
