"""serve judges core objects with the cluster's gates, read from the API
server's kubernetes_feature_enabled metric; unknown means on (the API server
has already judged gated fields before a validating webhook is called)."""
from webhook.cluster import gates
from webhook.config import DEFAULT_GATES

METRICS = """# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="CompositePodGroup",stage="ALPHA"} 1
kubernetes_feature_enabled{name="PodGroupPreemptionPolicy",stage="ALPHA"} 0
kubernetes_feature_enabled{name="GenericWorkload",stage="BETA"} 1
kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0
apiserver_request_total{code="200",name="x"} 12
"""


def test_metrics_text_gives_each_gate():
    read = gates.from_metrics(METRICS)
    assert read["CompositePodGroup"] is True and read["PodGroupPreemptionPolicy"] is False
    assert read["GenericWorkload"] is True and "x" not in read


def test_garbage_gives_no_gates():
    assert gates.from_metrics("kubernetes_feature_enabled{name=\"A\"} notanumber\n{}\n\udfff") == {}


class FakeResponse:
    def __init__(self, status, body):
        self.status, self.body = status, body

    def read(self):
        return self.body


class Api:
    """The two ApiClient calls gates.py makes (this is not a fake API server: the
    e2e reads a real one's metrics)."""
    def __init__(self, status=200, body=METRICS.encode(), error=None):
        self.status, self.body, self.error = status, body, error

    def param_serialize(self, method, path, **kw):
        assert (method, path) == ("GET", "/metrics")
        return (method, path, {}, None, None)

    def call_api(self, *request, _request_timeout=None):
        if self.error:
            raise self.error
        return FakeResponse(self.status, self.body)


def test_serving_gates_follow_the_cluster_and_default_to_on():
    found, how = gates.serving_gates(Api())
    assert set(found) == set(DEFAULT_GATES)
    assert found["PodGroupPreemptionPolicy"] is False and found["CompositePodGroup"] is True
    assert found["DRAWorkloadResourceClaims"] is True      # not in the metric: on
    assert "from the API server" in how


def test_unreadable_metrics_leave_gates_to_the_api_server():
    for api in (Api(status=403, body=b"forbidden"), Api(error=OSError("connection refused")), None):
        found, how = gates.serving_gates(api)
        assert all(found.values()) and set(found) == set(DEFAULT_GATES)
        assert "left to the API server" in how
