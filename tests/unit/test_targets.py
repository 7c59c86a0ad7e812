"""CRDs configured as targets (TGT-1..3), size bounds (POL-3) and defaulting (DEF-1)."""
import pytest

from webhook import engine
from webhook.mutation.patch import apply
from tests.unit.helpers import check, config, found, groupjob, trainjob

S = "spec.scheduling"


def job(replicas=2, minCount=None, **sched):
    gang = {} if minCount is None else {"minCount": minCount}
    return {"name": "j", "replicas": replicas, "scheduling": {"schedulingPolicy": {"gang": gang}, **sched}}


CASES = [
    ("TGT-1", "errors carry the CRD's paths", trainjob({"schedulingPolicy": {"gang": {"minCount": 0}}}),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("TGT-2", "no scheduling block at all", trainjob(), set()),
    ("TGT-2", "scheduling is a string", trainjob("gang"), {("Invalid", "spec.scheduling")}),
    ("TGT-2", "spec is a list", {**trainjob(), "spec": [1, 2]}, {("Invalid", "spec")}),
    ("TGT-2", "block is a number", trainjob({"disruptionMode": 7}), {("Invalid", f"{S}.disruptionMode")}),
    ("TGT-2", "claims is an object", trainjob({"resourceClaims": {"name": "x"}}), {("Invalid", f"{S}.resourceClaims")}),
    ("TGT-3", "fan-out reports the real index", groupjob(None, [job(), job(minCount=0)]),
     {("Invalid", "spec.replicatedJobs[1].scheduling.schedulingPolicy.gang.minCount")}),
    ("TGT-3", "every item is judged", groupjob(None, [job(minCount=5), job(), job(minCount=3)]),
     {("Invalid", "spec.replicatedJobs[0].scheduling.schedulingPolicy.gang.minCount"),
      ("Invalid", "spec.replicatedJobs[2].scheduling.schedulingPolicy.gang.minCount")}),
    ("TGT-3", "list of wrong type", groupjob(None, "jobs"), {("Invalid", "spec.replicatedJobs")}),
    ("TGT-3", "item of wrong type", groupjob(None, [job(), "x"]), {("Invalid", "spec.replicatedJobs[1]")}),
    ("TGT-3", "empty list and no composite block", groupjob(None, []), set()),
    ("TGT-3", "all+basic in one item",
     groupjob(None, [job(), {"replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}]),
     {("Invalid", "spec.replicatedJobs[1].scheduling.disruptionMode")}),
    ("POL-3", "minCount equal to replicas", trainjob({"schedulingPolicy": {"gang": {"minCount": 4}}}, replicas=4), set()),
    ("POL-3", "minCount above replicas", trainjob({"schedulingPolicy": {"gang": {"minCount": 5}}}, replicas=4),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-3", "no replicas: no bound", trainjob({"schedulingPolicy": {"gang": {"minCount": 50}}}, replicas=None), set()),
    ("POL-3", "replicas of wrong type: the size is refused, not ignored",
     trainjob({"schedulingPolicy": {"gang": {"minCount": 50}}}, replicas="4"), {("Invalid", "spec.replicas")}),
    ("POL-3", "a size of 8.0 read offline is 8",
     trainjob({"schedulingPolicy": {"gang": {"minCount": 9}}}, replicas=8.0), {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-3", "minGroupCount within children",
     groupjob({"schedulingPolicy": {"gang": {"minGroupCount": 2}}}, [job(), job()]), set()),
    ("POL-3", "minGroupCount above children",
     groupjob({"schedulingPolicy": {"gang": {"minGroupCount": 3}}}, [job(), job()]),
     {("Invalid", f"{S}.schedulingPolicy.gang.minGroupCount")}),
]


@pytest.mark.parametrize("rule,name,obj,expected", CASES, ids=[f"{c[0]} {c[1]}" for c in CASES])
def test_target(rule, name, obj, expected):
    assert found(check(obj)) == expected


def test_POL_3_detail_names_size_field_and_value():
    err = check(trainjob({"schedulingPolicy": {"gang": {"minCount": 5}}}, replicas=4)).errors[0]
    assert "spec.replicas" in err.detail and "4" in err.detail


UPDATES = [
    ("POL-3", "scaling replicas below minCount is rejected",
     trainjob({"schedulingPolicy": {"gang": {"minCount": 4}}}, replicas=3),
     trainjob({"schedulingPolicy": {"gang": {"minCount": 4}}}, replicas=4),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-4", "raising minCount above replicas", trainjob({"schedulingPolicy": {"gang": {"minCount": 9}}}, replicas=8),
     trainjob({"schedulingPolicy": {"gang": {"minCount": 4}}}, replicas=8), {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-4", "composite policy frozen in a CRD",
     groupjob({"schedulingPolicy": {"gang": {"minGroupCount": 1}}}, [job()]),
     groupjob({"schedulingPolicy": {"gang": {"minGroupCount": 2}}}, [job(), job()]) | {"spec": {
         "scheduling": {"schedulingPolicy": {"gang": {"minGroupCount": 2}}}, "replicatedJobs": [job()]}},
     {("Invalid", f"{S}.schedulingPolicy")}),
    ("POL-4", "fan-out item switches variant",
     groupjob(None, [job(), {"replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}}}}]),
     groupjob(None, [job(), job()]),
     {("Invalid", "spec.replicatedJobs[1].scheduling.schedulingPolicy")}),
    ("TGT-3", "removing the first item compares items by name, not position",
     groupjob(None, [{"name": "b", "replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}}}}]),
     groupjob(None, [{"name": "a", "replicas": 2, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}},
                     {"name": "b", "replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}}}}]), set()),
    ("TGT-3", "an appended item is judged as new",
     groupjob(None, [job(), {"name": "k", "replicas": 1, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 1}}}}]),
     groupjob(None, [job()]), set()),
    ("TGT-3", "a renamed item is new, its bad policy judged as at create",
     groupjob(None, [{"name": "z", "replicas": 1, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 5}}}}]),
     groupjob(None, [job()]), {("Invalid", "spec.replicatedJobs[0].scheduling.schedulingPolicy.gang.minCount")}),
    ("TGT-3", "same name, variant switched",
     groupjob(None, [{"name": "j", "replicas": 2, "scheduling": {"schedulingPolicy": {"basic": {}}}}]),
     groupjob(None, [job()]), {("Invalid", "spec.replicatedJobs[0].scheduling.schedulingPolicy")}),
    ("TGT-1", "unrelated change is fine", trainjob({"schedulingPolicy": {"gang": {"minCount": 4}}}, image="b"),
     trainjob({"schedulingPolicy": {"gang": {"minCount": 4}}}, image="a"), set()),
]


@pytest.mark.parametrize("rule,name,new,old,expected", UPDATES, ids=[f"{c[0]} {c[1]}" for c in UPDATES])
def test_target_update(rule, name, new, old, expected):
    assert found(check(new, old)) == expected


def test_unconfigured_version_is_not_judged():
    cfg = config(targets=[{"group": "training.example.com", "kind": "TrainJob", "versions": ["v2"],
                           "groups": [{"schedulingPolicy": "spec.scheduling.schedulingPolicy"}]}])
    v = check(trainjob({"schedulingPolicy": {}}), cfg=cfg)
    assert v.allowed and not v.checked


def mutated(obj):
    v = engine.mutate(engine.Request.for_object(obj), config())
    assert v.allowed
    return v, apply(obj, v.patch or [])


DEFAULTS = [
    ("gang minCount from replicas", trainjob({"schedulingPolicy": {"gang": {}}}, replicas=6),
     lambda o: o["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"], 6),
    ("replicas 0 leaves it unset", trainjob({"schedulingPolicy": {"gang": {}}}, replicas=0),
     lambda o: o["spec"]["scheduling"]["schedulingPolicy"]["gang"].get("minCount"), None),
    ("set value is kept", trainjob({"schedulingPolicy": {"gang": {"minCount": 2}}}, replicas=6),
     lambda o: o["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"], 2),
    ("no size leaves it unset", trainjob({"schedulingPolicy": {"gang": {}}}, replicas=None),
     lambda o: o["spec"]["scheduling"]["schedulingPolicy"]["gang"].get("minCount"), None),
    ("basic is untouched", trainjob({"schedulingPolicy": {"basic": {}}}, replicas=3),
     lambda o: o["spec"]["scheduling"]["schedulingPolicy"], {"basic": {}}),
    ("fan-out items each get their size", groupjob(None, [job(replicas=3), job(replicas=5, minCount=2)]),
     lambda o: [j["scheduling"]["schedulingPolicy"]["gang"]["minCount"] for j in o["spec"]["replicatedJobs"]], [3, 2]),
    ("composite minGroupCount from children", groupjob({"schedulingPolicy": {"gang": {}}}, [job(), job(), job()]),
     lambda o: o["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minGroupCount"], 3),
]


@pytest.mark.parametrize("name,obj,read,expected", DEFAULTS, ids=[f"DEF-1 {d[0]}" for d in DEFAULTS])
def test_DEF_1_defaults(name, obj, read, expected):
    _, out = mutated(obj)
    assert read(out) == expected
    assert check(out).allowed       # what the mutation wrote never fails validation


def test_DEF_1_is_idempotent_and_create_only():
    v, out = mutated(trainjob({"schedulingPolicy": {"gang": {}}}, replicas=6))
    assert v.patch == [{"op": "add", "path": "/spec/scheduling/schedulingPolicy/gang/minCount", "value": 6}]
    again = engine.mutate(engine.Request.for_object(out), config())
    assert again.patch is None
    update = engine.mutate(engine.Request.for_object(trainjob({"schedulingPolicy": {"gang": {}}}),
                                                     trainjob({"schedulingPolicy": {"gang": {}}})), config())
    assert update.patch is None


def test_DEF_1_no_default_above_max_min_count():
    cfg = config(limits={"maxMinCount": 10})
    obj = trainjob({"schedulingPolicy": {"gang": {}}}, replicas=50)
    v = engine.mutate(engine.Request.for_object(obj), cfg)
    assert v.patch is None and engine.validate(engine.Request.for_object(obj), cfg).allowed


def test_DEF_1_defaulted_object_is_valid():
    _, out = mutated(groupjob({"schedulingPolicy": {"gang": {}}}, [job(replicas=3), job(replicas=1)]))
    assert check(out).allowed


def test_POL_3_switched_off_allows_min_count_above_the_size():
    """policies.minCountWithinSize: false turns POL-3 off for targets, and only POL-3."""
    above = trainjob({"schedulingPolicy": {"gang": {"minCount": 9}}}, replicas=4)
    assert found(check(above)) == {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}
    off = config(policies={"minCountWithinSize": False})
    assert found(check(above, cfg=off)) == set()
    zero = trainjob({"schedulingPolicy": {"gang": {"minCount": 0}}}, replicas=4)
    assert found(check(zero, cfg=off)) == {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}


# ---------------------------------------------------------------- the resource name a target registers

from webhook import config as config_mod                                   # noqa: E402
from webhook.targets import UnknownResource, obvious_plural, offline_resources  # noqa: E402


@pytest.mark.parametrize("kind, plural", [
    ("TrainJob", "trainjobs"), ("JobSet", "jobsets"), ("LeaderWorkerSet", "leaderworkersets"),
    ("MPIJob", "mpijobs"), ("Workload", "workloads"), ("InferenceService", "inferenceservices"),
    ("ResourceQuota", "resourcequotas"), ("Queue", "queues"),
])
def test_a_kind_that_plainly_takes_an_s(kind, plural):
    assert obvious_plural(kind) == plural


@pytest.mark.parametrize("kind", [
    "TrainingPolicy", "GangClass", "Gateway", "Endpoints", "Mailbox", "Batch", "Mesh", "Quiz", "Hero", "Leaf",
    "Knife", "Datum", "Alumni", "Person", "Salesperson", "Child", "Foreman", "Metadata", "Sheep", "Aircraft",
    "Software", "ClusterIP", "T", "ConfigV2",
])
def test_a_kind_in_doubt_has_no_plural_of_its_own(kind):
    """What lowercase + "s" would get wrong (TrainingPolicy is served as trainingpolicies),
    or could: an acronym, a digit, an irregular or uncountable last word."""
    assert obvious_plural(kind) is None


def test_offline_a_kind_in_doubt_needs_plural_and_says_so():
    tp = {"group": "policy.example.com", "kind": "TrainingPolicy", "groups": [{"schedulingPolicy": "spec.p"}]}
    with pytest.raises(UnknownResource) as err:
        offline_resources(config_mod.from_dict({"targets": [tp]}).targets)
    assert err.value.problems == ["TrainingPolicy.policy.example.com: give `plural` (or --crd, or --kubeconfig): the "
                                  "resource name of kind TrainingPolicy cannot be told from the kind "
                                  "(docs/configuration.md#plural)"]
    cfg = config_mod.from_dict({"targets": [{**tp, "plural": "trainingpolicies"}]})
    assert offline_resources(cfg.targets) == {"TrainingPolicy.policy.example.com": "trainingpolicies"}


def test_what_a_target_writes_is_recorded_setting_by_setting():
    t = config_mod.from_dict({"targets": [{
        "group": "g.example.com", "kind": "K", "plural": "ks",
        "groups": [{"at": "spec.s", "size": {"sum": "spec.jobs", "product": ["replicas"]}, "defaultMinCount": False}],
        "checks": {"immutable": [{"path": "spec.s"}]}}]}).targets[0]
    assert t.written == {"group", "kind", "plural", "groups.at", "groups.size", "groups.size.sum",
                         "groups.size.product", "groups.defaultMinCount", "checks.immutable"}


def test_only_a_target_with_defaults_is_mutated():
    def mutates(**group):
        return config_mod.from_dict({"targets": [{"group": "g.example.com", "kind": "TrainJob",
                                                  "groups": [{"schedulingPolicy": "spec.p", **group}]}]}).targets[0].mutates
    assert mutates() and not mutates(defaultMinCount=False) and not mutates(minCount="unset")
    shipped = config_mod.from_dict({"profiles": ["jobset", "leaderworkerset"]}).targets
    assert [t.mutates for t in shipped] == [False, False]     # they default nothing (the operators compute minCount)
