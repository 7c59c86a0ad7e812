"""The watch cache keeps a projection of each PodGroup (webhook/cluster/projection.py).
Proof that it is enough: over every PodGroup fixture of the unit tests (the Pod
tests' groups, the upstream validation cases, a PodGroup exactly as kube-apiserver
1.37.2 stores it, and that object broken at every node), the Pod join gives the very
same AdmissionReview answer (verdict, warnings, patch) with the projected, packed
and unpacked object in the view as with the whole object."""
import copy
import os

import pytest
import yaml

from webhook import engine
from webhook.admission import review
from webhook.cluster import projection
from webhook.cluster.store import PackedStore as Store
from webhook.view import StaticView
from tests.unit import test_pods
from tests.unit.helpers import config, node_paths, pod, podgroup

LABEL = "scheduling.k8s.io/pod-group"
GPU, NIC = test_pods.GPU, test_pods.NIC
DATA = os.path.join(os.path.dirname(__file__), "data", "upstream_cases.yaml")

#: A PodGroup as kube-apiserver 1.37.2 returns it (tests/e2e/scale.py's job, created by a client).
STORED = {
    "kind": "PodGroup", "apiVersion": "scheduling.k8s.io/v1beta1",
    "metadata": {"name": "pg", "namespace": "ml", "uid": "d96d9cd7-6939-4e63-859a-7cdff6a8df9c",
                 "resourceVersion": "371", "creationTimestamp": "2026-12-01T11:42:28Z",
                 "labels": {"app": "scale", "batch.kubernetes.io/job-name": "job-3"},
                 "finalizers": ["scheduling.k8s.io/podgroup-protection"],
                 "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                                    "apiVersion": "scheduling.k8s.io/v1beta1", "time": "2026-12-01T11:42:28Z",
                                    "fieldsType": "FieldsV1", "fieldsV1": {
                                        "f:metadata": {"f:labels": {".": {}, "f:app": {},
                                                                    "f:batch.kubernetes.io/job-name": {}}},
                                        "f:spec": {"f:disruptionMode": {".": {}, "f:single": {}},
                                                   "f:preemptionPolicy": {},
                                                   "f:resourceClaims": {".": {}, 'k:{"name":"gpu"}': {
                                                       ".": {}, "f:name": {}, "f:resourceClaimTemplateName": {}}},
                                                   "f:schedulingPolicy": {"f:gang": {".": {}, "f:minCount": {}}},
                                                   "f:workloadRef": {".": {}, "f:templateName": {},
                                                                     "f:workloadName": {}}}}}]},
    "spec": {"workloadRef": {"workloadName": "job-3", "templateName": "workers"},
             "schedulingPolicy": {"gang": {"minCount": 4}}, "resourceClaims": [GPU],
             "disruptionMode": {"single": {}}, "priority": 0, "preemptionPolicy": "PreemptLowerPriority"},
    "status": {}}


def _named(obj):
    """The fixture as the PodGroup "pg" in namespace "ml" (what the Pods below join)."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata") if isinstance(out.get("metadata"), dict) else {}
    out.update(KIND)
    out["metadata"] = {**meta, "name": "pg", "namespace": "ml"}
    return out


def _upstream_groups() -> list:
    with open(DATA) as f:
        cases = yaml.safe_load(f)
    return [case[key] for case in cases if case["kind"] == "PodGroup"
            for key in ("object", "oldObject") if isinstance(case.get(key), dict)]


def _broken(obj) -> list:
    """The object with each node in turn replaced by values of the wrong type."""
    out = []
    for path in node_paths(obj):
        if not path:
            continue
        for bad in (5, "x", [1], {"a": []}, None):
            broken = copy.deepcopy(obj)
            node = broken
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = bad
            out.append(broken)
    return out


KIND = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup"}
dying = podgroup("pg", resourceClaims=[GPU])
dying["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
FIXTURES = [test_pods.GROUP, podgroup("pg"), dying,
            podgroup("pg", resourceClaims=[{"name": "", "resourceClaimName": "x"}, GPU]),
            podgroup("pg", resourceClaims=[GPU, {"name": "gpu", "resourceClaimName": "dup"}]),
            podgroup("pg", resourceClaims=[{"name": "gpu", "resourceClaimName": None,
                                            "resourceClaimTemplateName": "gpus"}]),
            podgroup("pg", workloadRef={"templateName": "workers"}),
            {**KIND, "metadata": {"name": "pg", "namespace": "ml"}}, {**KIND, "metadata": None, "spec": None},
            STORED, *_upstream_groups(), *_broken(STORED)]

PODS = [pod({LABEL: "pg"}),
        pod(None, schedulingGroup={"podGroupName": "pg"}),
        pod({LABEL: "pg"}, resourceClaims=[GPU]),
        pod({LABEL: "pg"}, resourceClaims=[{"name": "gpu", "resourceClaimName": "other"}]),
        pod({LABEL: "pg", "scheduling.k8s.io/workload": "mine"}, resourceClaims=[NIC],
            containers=[{"name": "a", "resources": {"claims": [{"name": "gpu"}]}}, {"name": "b"}])]

CONFIGS = [config(), config(pods={"claimsToContainers": "all"}), config(pods={"onMissingPodGroup": "deny"}),
           config(pods={"workloadLabel": None}),
           config(pods={"onMissingPodGroup": "deny"}, enforcement={"rules": {"POD-4": "warn", "POD-5": "audit"}})]


class CachedView(StaticView):
    """The watch cache's store behind a view: projected, packed, unpacked on each lookup."""

    def __init__(self, obj):
        super().__init__((), authoritative=True)
        self.store = Store(project=projection.podgroup)
        self.store.replace([obj], "1")

    def podgroup(self, namespace, name):
        return self.store.get(namespace, name)


def _answer(p, cfg, view) -> dict:
    verdict = engine.mutate(engine.Request("CREATE", "", "v1", "Pod", copy.deepcopy(p), None, "ml"), cfg, view)
    return review.respond("uid", verdict)


def test_every_fixture_is_exercised():
    assert len(FIXTURES) > 100
    assert any(projection.podgroup(_named(f)) is not _named(f) for f in FIXTURES)      # most are projected
    assert any(projection.podgroup(f) is f for f in _broken(STORED))                   # broken ones kept whole


# The fixtures the cache can key by namespace/name (the others never reach a lookup).
KEYED = [i for i, f in enumerate(FIXTURES) if CachedView(_named(f)).store.get("ml", "pg") is not None]


def test_most_fixtures_are_keyed():
    assert len(KEYED) > 100


@pytest.mark.parametrize("index", KEYED)
def test_the_pod_join_is_the_same_on_the_projection(index):
    whole = _named(FIXTURES[index])
    whole_view, cached_view = StaticView([whole], authoritative=True), CachedView(whole)
    for cfg in CONFIGS:
        for p in PODS:
            assert _answer(p, cfg, cached_view) == _answer(p, cfg, whole_view), (p, cfg)


def test_the_projection_is_small_and_keeps_no_managed_fields():
    packed = projection.pack(projection.podgroup(STORED))
    assert len(packed) <= 256 < len(projection.pack(STORED))
    kept = projection.unpack(packed)
    assert "managedFields" not in kept["metadata"] and "labels" not in kept["metadata"]
    assert kept == {"metadata": {"name": "pg", "namespace": "ml", "resourceVersion": "371"},
                    "spec": {"workloadRef": {"workloadName": "job-3"}, "priority": 0,
                             "preemptionPolicy": "PreemptLowerPriority", "resourceClaims": [GPU]}}


def test_a_lookup_returns_a_fresh_object():
    view = CachedView(STORED)
    view.podgroup("ml", "pg")["spec"]["resourceClaims"].clear()
    assert view.podgroup("ml", "pg")["spec"]["resourceClaims"] == [GPU]


def test_a_paged_relist_drops_only_what_it_did_not_see():
    s = Store(project=projection.podgroup)
    s.replace([_named(STORED), {**podgroup("b")}], "5")
    s.begin()
    s.add([{**podgroup("b"), "metadata": {"name": "b", "namespace": "ml", "resourceVersion": "7"}}])
    assert s.get("ml", "pg") is not None          # still answered while the relist runs
    s.add([podgroup("c")])
    s.finish("9")
    assert s.get("ml", "pg") is None and s.get("ml", "b")["metadata"]["resourceVersion"] == "7"
    assert s.get("ml", "c") is not None and s.resource_version == "9" and len(s.objects) == 2


def test_a_snapshot_round_trips_and_garbage_is_no_snapshot():
    import marshal
    from webhook.cluster import snapshot
    s = Store(project=projection.podgroup)
    s.replace([_named(STORED)], "42")
    blob = bytearray(marshal.dumps((snapshot.FORMAT, {"podgroups": ("v1beta1", "42", s.objects)})))
    assert snapshot.restore(blob) == {"podgroups": ("v1beta1", "42", s.objects)}
    for bad in (None, b"", b"garbage", marshal.dumps(("other/format", {})), marshal.dumps((snapshot.FORMAT, [])),
                marshal.dumps((snapshot.FORMAT, {"podgroups": ("v1beta1", 42, {})}))):
        assert snapshot.restore(bad) == {}
