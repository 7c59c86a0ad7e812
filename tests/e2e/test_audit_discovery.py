"""A target configured without versions is audited in its group's preferred
version, as the real API server's discovery names it."""
from webhook.audit.lister import Lister, Resource
from webhook.cluster.cache import api_client


def test_a_target_without_versions_is_listed_in_the_preferred_version(cluster):
    lister = Lister(api_client("kubeconfig", cluster.kubeconfig("admin")))
    assert lister.version(Resource("scheduling.k8s.io", "PodGroup", "podgroups", ())) == "v1beta1"
    assert lister.version(Resource("nothing.example.com", "Thing", "things", ())) is None
