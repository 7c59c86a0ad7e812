"""serve reads the feature gates from the real API server's metrics; a user
that may not read /metrics leaves the gate checks to the API server."""
from tests.e2e.controlplane import DEFAULT_FEATURE_GATES
from webhook.cluster.cache import api_client
from webhook.cluster.gates import read_cluster_gates, serving_gates
from webhook.config import DEFAULT_GATES


def test_the_gates_are_the_api_servers(cluster):
    api = api_client("kubeconfig", cluster.kubeconfig("admin"))
    read = read_cluster_gates(api)
    assert read is not None
    for gate, on in DEFAULT_FEATURE_GATES.items():
        assert read[gate] is on, gate
    assert read["AllAlpha"] is False              # an off gate reads as off
    gates, how = serving_gates(api)
    assert gates == {g: DEFAULT_FEATURE_GATES.get(g, True) for g in DEFAULT_GATES}
    assert "PodGroupPreemptionPolicy=on" in how


def test_without_access_to_metrics_the_api_server_judges_the_gates(cluster):
    api = api_client("kubeconfig", cluster.kubeconfig("alice"))
    assert read_cluster_gates(api) is None
    gates, how = serving_gates(api)
    assert all(gates.values()) and "left to the API server" in how
