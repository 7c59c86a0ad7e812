"""Malformed and hostile objects get field errors or clean answers, never
exceptions (property-based, hypothesis), and large inputs stay bounded."""
import dataclasses
import os

import jsonpatch

from hypothesis import HealthCheck, given, settings, strategies as st

from webhook import engine
from webhook.view import StaticView
from webhook.field import FieldError
from tests.unit.helpers import config, groupjob, node_paths, pod, replaced, podgroup, template, trainjob, workload

CFG = config(pods={"claimsToContainers": "all"}, profiles=["jobset", "leaderworkerset"],
             featureGates={"CompositePodGroup": True, "PodGroupPreemptionPolicy": True, "WorkloadWithJob": True})
_POD = {"spec": {"containers": [{"name": "c"}], "schedulingGroup": {"podGroupName": "x"}}}

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=25)

SEEDS = [
    workload([template("a", disruptionMode={"all": {}}, resourceClaims=[{"name": "g", "resourceClaimName": "g"}],
                       schedulingConstraints={"topology": [{"key": "k"}]})]),
    podgroup(resourceClaims=[{"name": "g", "resourceClaimName": "g"}], workloadRef={"workloadName": "w", "templateName": "t"}),
    trainjob({"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}},
              "resourceClaims": [{"name": "g", "resourceClaimName": "g"}]}),
    groupjob({"schedulingPolicy": {"gang": {"minGroupCount": 1}}},
             [{"replicas": 2, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}]),
    pod({"scheduling.k8s.io/pod-group": "pg"}, resourceClaims=[{"name": "g", "resourceClaimName": "g"}]),
    # The shipped profiles: every level of a JobSet, and a LeaderWorkerSet.
    {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js", "namespace": "ml"},
     "spec": {"suspend": True, "replicatedJobs": [
         {"name": "a", "replicas": 2, "template": {"spec": {"parallelism": 3, "template": _POD,
                                                            "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}}},
         {"name": "b", "replicas": 1, "template": {"spec": {"template": _POD}}}],
         "scheduling": {"schedulingPolicy": {"gang": {"minCount": 3}}, "disruptionMode": {"all": {}},
                        "replicatedJobs": [{"targetReplicatedJobs": ["a"], "job": {"schedulingPolicy": {"gang": {"minCount": 1}}}},
                                           {"targetReplicatedJobs": ["b", "a"], "resourceClaims": [{"name": "g"}]}]}}},
    # Built in: a Job and a CronJob (scheduling and pod template), a Deployment's pod template.
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ml"},
     "spec": {"parallelism": 2, "template": {"metadata": {"labels": {"scheduling.k8s.io/pod-group": "pg"}}, **_POD},
              "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}},
                             "schedulingConstraints": {"topology": [{"key": "k"}]},
                             "resourceClaims": [{"name": "g", "resourceClaimName": "g"}]}}},
    {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj", "namespace": "ml"},
     "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": _POD, "scheduling": {
         "schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}}}}}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"},
     "spec": {"replicas": 2, "template": {"metadata": {"labels": {"scheduling.k8s.io/pod-group": "pg"}}, **_POD}}},
    {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "l", "namespace": "ml"},
     "spec": {"startupPolicy": "LeaderReady", "leaderWorkerTemplate": {"size": 4, "workerTemplate": _POD},
              "scheduling": {"schedulingPolicy": {"gang": {"minCount": 4}}, "resourceClaims": [{"name": "g"}]}}},
]


@st.composite
def corrupted(draw):
    """A valid seed with one node anywhere replaced by arbitrary JSON."""
    seed = draw(st.sampled_from(SEEDS))
    paths = [p for p in node_paths(seed) if p[:1] != ("apiVersion",) and p[:1] != ("kind",)]
    path = draw(st.sampled_from(paths))
    return seed, replaced(seed, path, draw(json_values))


VIEW = StaticView([podgroup("pg", resourceClaims=[{"name": "g", "resourceClaimName": "g"},
                                                   {"name": "h", "resourceClaimTemplateName": "t"}],
                             workloadRef={"workloadName": "w", "templateName": "t"})], authoritative=True)


def _keys(errors) -> set:
    return {(e.type, str(e.field)) for e in errors}


def _judge(seed, obj, old=None):
    """Every verdict renders; every patch applies (an independent RFC 6902
    implementation), only adds, and is idempotent: mutating the result gives no
    second patch, and the result has no validation error the input lacked."""
    group, _, version = seed["apiVersion"].rpartition("/")
    req = engine.Request("UPDATE" if old is not None else "CREATE", group, version, seed["kind"], obj, old, "ml")
    before = engine.validate(req, CFG, VIEW)
    mutated = engine.mutate(req, CFG, VIEW)
    for verdict in (before, mutated):
        assert all(isinstance(e, FieldError) for e in verdict.errors)
        for e in verdict.errors:
            str(e)  # every error renders
    if not mutated.patch:
        return
    # Only additions: `add`, or `replace` of an explicit null (a defaulted field sent as null).
    for op in mutated.patch:
        assert op["op"] == "add" or (op["op"] == "replace" and jsonpatch.JsonPointer(op["path"]).resolve(obj) is None), op
    out = jsonpatch.JsonPatch(mutated.patch).apply(obj)
    again = engine.mutate(dataclasses.replace(req, object=out), CFG, VIEW)
    assert again.patch is None, (mutated.patch, again.patch)
    after = engine.validate(dataclasses.replace(req, object=out), CFG, VIEW)
    assert _keys(after.errors) <= _keys(before.errors), (mutated.patch, after.errors)


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 400)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted())
def test_corrupted_objects_never_raise(case):
    seed, obj = case
    _judge(seed, obj)


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 200)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted(), corrupted())
def test_corrupted_updates_never_raise(new, old):
    _judge(new[0], new[1], old[1] if old[0]["kind"] == new[0]["kind"] else new[0])


@st.composite
def same_kind_updates(draw):
    """An UPDATE whose old and new objects are both corruptions of the same seed."""
    seed = draw(st.sampled_from(SEEDS))
    paths = [p for p in node_paths(seed) if p[:1] not in (("apiVersion",), ("kind",))]
    new = replaced(seed, draw(st.sampled_from(paths)), draw(json_values))
    old = replaced(seed, draw(st.sampled_from(paths)), draw(json_values))
    return seed, new, old


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 300)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(same_kind_updates())
def test_same_kind_updates_never_raise(case):
    seed, new, old = case
    _judge(seed, new, old)


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 300)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["app", "scheduling.k8s.io/pod-group", "a/b~c", "scheduling.k8s.io/workload"]),
                       st.sampled_from(["pg", "other", "x"]), max_size=3),
       st.lists(st.fixed_dictionaries({"name": st.sampled_from(["g", "h", "z", ""]),
                                       "resourceClaimName": st.sampled_from(["g", "x"])}), max_size=3),
       st.lists(st.one_of(st.fixed_dictionaries({"name": st.just("c")}),
                          st.fixed_dictionaries({"name": st.just("c"), "resources": st.one_of(
                              st.none(), st.just({}), st.just({"claims": None}),
                              st.just({"claims": [{"name": "g"}]}))})), max_size=3),
       st.sampled_from(["labels-null", "labels", "no-meta-labels"]), st.booleans())
def test_POD_6_pod_patches_apply_and_are_idempotent(labels, pod_claims, containers, meta_shape, field):
    """Pods in every shape the patch builder distinguishes (labels missing/null,
    claims missing/partial/conflicting, containers with and without resources)."""
    p = pod(labels, containers=containers, **({"resourceClaims": pod_claims} if pod_claims else {}),
            **({"schedulingGroup": {"podGroupName": "pg"}} if field else {}))
    if meta_shape == "labels-null":
        p["metadata"]["labels"] = None if not labels else p["metadata"]["labels"]
    elif meta_shape == "no-meta-labels" and not labels:
        p["metadata"].pop("labels", None)
    _judge(p, p)


def test_unicode_names_are_invalid_not_crashes():
    v = engine.validate(engine.Request.for_object(workload([template("wörkers✓")])), CFG)
    assert [(e.type, str(e.field)) for e in v.errors] == [("Invalid", "spec.podGroupTemplates[0].name")]


def test_huge_integers():
    v = engine.validate(engine.Request.for_object(podgroup(schedulingPolicy={"gang": {"minCount": 10**40}})), CFG)
    assert [(e.type, str(e.field)) for e in v.errors] == [("Invalid", "spec.schedulingPolicy.gang.minCount")]


def test_ten_thousand_element_lists_are_bounded():
    claims = [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(10_000)]
    v = engine.validate(engine.Request.for_object(podgroup(resourceClaims=claims)), CFG)
    assert [(e.type, str(e.field)) for e in v.errors] == [("TooMany", "spec.resourceClaims")]
    wl = engine.validate(engine.Request.for_object(workload([template(f"t{i}") for i in range(10_000)])), CFG)
    assert ("TooMany", "spec.podGroupTemplates") in {(e.type, str(e.field)) for e in wl.errors}
    jobs = [{"replicas": 1, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}] * 10_000
    gj = engine.validate(engine.Request.for_object(groupjob(None, jobs)), CFG)
    assert len(gj.errors) == 10_000  # every item is judged, each at its own index
    assert str(gj.errors[-1].field) == "spec.replicatedJobs[9999].scheduling.schedulingPolicy.gang.minCount"


def test_structural_errors_are_capped():
    bad = [{"name": 1, "resourceClaimName": 2}] * 10_000
    v = engine.validate(engine.Request.for_object(podgroup(resourceClaims=bad)), CFG)
    assert 0 < len(v.errors) <= 20


def test_deep_nesting_is_a_denial():
    node: dict = {}
    for _ in range(5000):
        node = {"x": node}
    v = engine.validate(engine.Request.for_object(trainjob({"schedulingPolicy": node})), CFG)
    assert not v.allowed
    deep = workload(composites=[node])
    assert not engine.validate(engine.Request.for_object(deep), CFG).allowed


def test_null_everywhere_is_absent():
    obj = podgroup(schedulingConstraints=None, resourceClaims=None)
    obj["spec"]["priority"] = None
    obj["metadata"]["labels"] = None
    assert engine.validate(engine.Request.for_object(obj), CFG).allowed


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 200)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["spec", "spec.resourceClaims", "spec.workloadRef", "metadata", "spec.podGroupTemplates"]),
       json_values)
def test_malformed_cluster_objects_never_raise(where, junk):
    """A cluster view (or the files given to `validate`) may hold broken PodGroups and Workloads."""
    from webhook.view import StaticView
    pg = podgroup(resourceClaims=[{"name": "g", "resourceClaimName": "g"}],
                  workloadRef={"workloadName": "wl", "templateName": "workers"})
    wl = workload([template("workers")])
    for obj in (pg, wl):
        node = obj
        keys = where.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = junk
    view = StaticView([pg, wl], authoritative=True)
    for verdict in (engine.mutate(engine.Request.for_object(pod({"scheduling.k8s.io/pod-group": "pg"})), CFG, view),
                    engine.validate(engine.Request.for_object(podgroup(
                        workloadRef={"workloadName": "wl", "templateName": "workers"})), CFG, view)):
        assert all(isinstance(e, FieldError) for e in verdict.errors)
