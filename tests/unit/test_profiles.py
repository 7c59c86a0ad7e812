"""The shipped profiles (webhook/profiles): JobSet and LeaderWorkerSet rules as
their own webhooks apply them at the pinned commits (../shared/adopters/SOURCES.md),
at the CRDs' own field paths. Pure engine calls; the real CRDs meet the real
API server in tests/e2e/test_adopters.py."""
from __future__ import annotations

import copy

import pytest

from webhook import config as config_mod
from webhook import engine, profiles
from webhook.schemas import structural_errors

CFG = config_mod.from_dict({"profiles": ["jobset", "leaderworkerset"]})
POD = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}


def rj(name, replicas=1, parallelism=None, scheduling=None, group=None):
    spec = {"template": copy.deepcopy(POD)}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if scheduling is not None:
        spec["scheduling"] = scheduling
    if group is not None:
        spec["template"]["spec"]["schedulingGroup"] = {"podGroupName": group}
    return {"name": name, "replicas": replicas, "template": {"spec": spec}}


def jobset(scheduling=None, jobs=None, suspend=None, suspended=False):
    """`suspended`: the status of a stored JobSet the controller has suspended (JS-5 reads it)."""
    spec = {"replicatedJobs": jobs or [rj("workers", 2, 4)]}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    if suspend is not None:
        spec["suspend"] = suspend
    out = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js", "namespace": "ml"},
           "spec": spec}
    if suspended:
        out["status"] = {"conditions": [{"type": "Suspended", "status": "True", "reason": "JobSetSuspended",
                                         "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    return out


def lws(scheduling=None, size=4, startup=None, group=None):
    worker = copy.deepcopy(POD)
    if group:
        worker["spec"]["schedulingGroup"] = {"podGroupName": group}
    spec = {"leaderWorkerTemplate": {"size": size, "workerTemplate": worker}}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    if startup:
        spec["startupPolicy"] = startup
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "l", "namespace": "ml"}, "spec": spec}


def errors(obj, old=None):
    v = engine.validate(engine.Request.for_object(obj, old), CFG)
    return {(e.type, str(e.field)) for e in v.errors}


G = lambda n: {"gang": {"minCount": n}}      # noqa: E731
S = "spec.scheduling"
TWO = [rj("a", 2, 3), rj("b", 1)]            # 2×3 + 1×1 = 7 pods

CASES = [
    # JobSet level 1 (whole JobSet): minCount <= Σ replicas × parallelism (default 1 each).
    ("JS L1 gang 8 = 2x4", jobset({"schedulingPolicy": G(8)}), None, set()),
    ("JS L1 gang 9 > 2x4", jobset({"schedulingPolicy": G(9)}), None, {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("JS L1 sum over jobs", jobset({"schedulingPolicy": G(7)}, TWO), None, set()),
    ("JS L1 sum over jobs exceeded", jobset({"schedulingPolicy": G(8)}, TWO), None,
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("JS L1 minCount 0 is unset", jobset({"schedulingPolicy": G(0)}), None, set()),
    ("JS L1 negative minCount is unset", jobset({"schedulingPolicy": G(-3)}), None, set()),
    ("JS L1 all with no policy (gang)", jobset({"disruptionMode": {"all": {}}}), None, set()),
    ("JS L1 all with basic", jobset({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}), None,
     {("Invalid", f"{S}.disruptionMode")}),
    ("JS L1 union", jobset({"schedulingPolicy": {}}), None, {("Invalid", f"{S}.schedulingPolicy")}),
    ("JS L1 and entries exclusive", jobset({"schedulingPolicy": G(1), "replicatedJobs": [{"targetReplicatedJobs": ["workers"]}]}),
     None, {("Forbidden", S)}),
    # Level 2 (an entry over its targets).
    ("JS L2 over targets", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a"], "schedulingPolicy": G(6)},
                                                      {"targetReplicatedJobs": ["b"]}]}, TWO), None, set()),
    ("JS L2 over targets exceeded", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a"], "schedulingPolicy": G(7)},
                                                               {"targetReplicatedJobs": ["b"]}]}, TWO), None,
     {("Invalid", f"{S}.replicatedJobs[0].schedulingPolicy.gang.minCount")}),
    ("JS L2 unknown target", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a", "b", "c"]}]}, TWO), None,
     {("Invalid", f"{S}.replicatedJobs[0].targetReplicatedJobs[2]")}),
    ("JS L2 target twice", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a", "b"]}, {"targetReplicatedJobs": ["b"]}]}, TWO),
     None, {("Invalid", f"{S}.replicatedJobs[1].targetReplicatedJobs[0]")}),
    ("JS L2 every job targeted", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a"]}]}, TWO), None,
     {("Invalid", "spec.replicatedJobs[1].name")}),
    ("JS L2 basic+all", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a", "b"], "schedulingPolicy": {"basic": {}},
                                                    "disruptionMode": {"all": {}}}]}, TWO), None,
     {("Invalid", f"{S}.replicatedJobs[0].disruptionMode")}),
    ("JS L2 five claims and a bad claim", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a", "b"],
                                                                      "resourceClaims": [{"name": "x"}]}]}, TWO), None,
     {("Invalid", f"{S}.replicatedJobs[0].resourceClaims[0]")}),
    # Level 3 (one gang per Job of the single target).
    ("JS L3 per Job parallelism", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a"], "job": {"schedulingPolicy": G(3)}},
                                                             {"targetReplicatedJobs": ["b"]}]}, TWO), None, set()),
    ("JS L3 over per Job parallelism", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a"], "job": {"schedulingPolicy": G(4)}},
                                                                  {"targetReplicatedJobs": ["b"]}]}, TWO), None,
     {("Invalid", f"{S}.replicatedJobs[0].job.schedulingPolicy.gang.minCount")}),
    ("JS L3 needs one target", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a", "b"], "job": {}}]}, TWO), None,
     {("Invalid", f"{S}.replicatedJobs[0].targetReplicatedJobs")}),
    ("JS L3 excludes the entry's blocks", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a"], "job": {},
                                                                      "disruptionMode": {"single": {}}},
                                                                     {"targetReplicatedJobs": ["b"]}]}, TWO), None,
     {("Invalid", f"{S}.replicatedJobs[0].job")}),
    ("JS L3 empty claims are unset", jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a"], "job": {}, "resourceClaims": []},
                                                                {"targetReplicatedJobs": ["b"]}]}, TWO), None, set()),
    # Operator-owned pod template field, only with spec.scheduling.
    ("JS schedulingGroup with scheduling", jobset({}, [rj("w", group="mine")]), None,
     {("Forbidden", "spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup")}),
    ("JS schedulingGroup without scheduling", jobset(None, [rj("w", group="mine")]), None, set()),
    # The embedded Job template: kube-apiserver's Job rules.
    ("JS Job template minCount > parallelism", jobset(None, [rj("w", 2, 2, {"schedulingPolicy": G(3)})]), None,
     {("Invalid", "spec.replicatedJobs[0].template.spec.scheduling.schedulingPolicy.gang.minCount")}),
    ("JS Job template all, policy unset (basic)", jobset(None, [rj("w", 1, 1, {"disruptionMode": {"all": {}}})]), None,
     {("Invalid", "spec.replicatedJobs[0].template.spec.scheduling.disruptionMode")}),
    # Updates: spec.scheduling is immutable unless the JobSet stays suspended.
    ("JS scheduling changed", jobset({"schedulingPolicy": G(4)}), jobset({"schedulingPolicy": G(2)}), {("Invalid", S)}),
    ("JS scheduling added", jobset({"schedulingPolicy": G(4)}), jobset(), {("Invalid", S)}),
    ("JS suspended change judged as a create", jobset({"schedulingPolicy": G(9)}, suspend=True),
     jobset({"schedulingPolicy": G(2)}, suspend=True, suspended=True), {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("JS suspended valid change", jobset({"schedulingPolicy": G(8)}, suspend=True),
     jobset({"schedulingPolicy": G(2)}, suspend=True, suspended=True), set()),
    ("JS unchanged", jobset({"schedulingPolicy": G(4)}), jobset({"schedulingPolicy": G(4)}), set()),
    # LeaderWorkerSet: minCount = size, gang by default, LeaderReady refuses a gang.
    ("LWS gang = size", lws({"schedulingPolicy": G(4)}), None, set()),
    ("LWS gang != size", lws({"schedulingPolicy": G(3)}), None, {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("LWS gang 0: one error", lws({"schedulingPolicy": G(0)}), None, {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("LWS gang without minCount", lws({"schedulingPolicy": {"gang": {}}}), None, {("Required", f"{S}.schedulingPolicy.gang.minCount")}),
    ("LWS size default 1", lws({"schedulingPolicy": G(1)}, size=None), None, set()),
    ("LWS empty policy", lws({"schedulingPolicy": {}}), None, {("Invalid", f"{S}.schedulingPolicy")}),
    ("LWS all with no policy (gang)", lws({"disruptionMode": {"all": {}}}), None, set()),
    ("LWS all with basic", lws({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}), None,
     {("Invalid", f"{S}.disruptionMode")}),
    ("LWS LeaderReady with gang", lws({"schedulingPolicy": G(4)}, startup="LeaderReady"), None,
     {("Forbidden", f"{S}.schedulingPolicy.gang")}),
    ("LWS LeaderReady with unset policy", lws({}, startup="LeaderReady"), None, {("Forbidden", f"{S}.schedulingPolicy.gang")}),
    ("LWS LeaderReady with basic", lws({"schedulingPolicy": {"basic": {}}}, startup="LeaderReady"), None, set()),
    ("LWS schedulingGroup in a template", lws({}, group="g"), None, {("Forbidden", S)}),
    ("LWS scheduling added", lws({"schedulingPolicy": G(4)}), lws(), {("Forbidden", S)}),
    ("LWS scheduling removed", lws(), lws({"schedulingPolicy": G(4)}), {("Forbidden", S)}),
    ("LWS size changed alone", lws({"schedulingPolicy": G(4)}, size=8), lws({"schedulingPolicy": G(4)}),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("LWS gang to basic (LWS allows)", lws({"schedulingPolicy": {"basic": {}}}), lws({"schedulingPolicy": G(4)}), set()),
    ("LWS constraints changed (LWS allows)", lws({"schedulingConstraints": {"topology": [{"key": "a.io/b"}]}}),
     lws({"schedulingConstraints": {"topology": [{"key": "a.io/c"}]}}), set()),
]


@pytest.mark.parametrize("name,obj,old,expected", CASES, ids=[c[0] for c in CASES])
def test_profile_rule(name, obj, old, expected):
    assert errors(obj, old) == expected


def test_profiles_expand_to_targets_the_config_schema_accepts():
    for name in ("jobset", "leaderworkerset"):
        for target in profiles.data(name)["targets"]:
            assert structural_errors("config", {"targets": [target]}) == [], name
    jt = config_mod.from_dict({"profiles": [{"name": "job-template", "group": "example.com", "kind": "CronTrainJob",
                                             "jobSpec": "spec.jobTemplate.spec"}]})
    group = jt.targets[0].groups[0]
    assert str(group.schedulingPolicy) == "spec.jobTemplate.spec.scheduling.schedulingPolicy"
    assert str(group.size.path) == "spec.jobTemplate.spec.parallelism" and group.size.default == 1


def test_an_unknown_profile_is_a_config_error():
    with pytest.raises(config_mod.ConfigError, match="profiles\\[0\\]"):
        config_mod.from_dict({"profiles": ["kueue"]})
    with pytest.raises(config_mod.ConfigError, match="jobSpec"):
        config_mod.from_dict({"profiles": [{"name": "job-template", "group": "g", "kind": "K"}]})


def test_max_groups_caps_the_instances_of_a_group():
    cfg = config_mod.from_dict({"targets": [{"group": "g.io", "kind": "Multi", "groups": [
        {"at": "spec.groups[*].scheduling", "size": "spec.groups[*].replicas", "maxGroups": 8}]}]})
    obj = {"apiVersion": "g.io/v1", "kind": "Multi", "metadata": {"name": "m"},
           "spec": {"groups": [{"replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}}}} for _ in range(9)]}}
    v = engine.validate(engine.Request.for_object(obj), cfg)
    assert [(e.type, str(e.field)) for e in v.errors] == [("TooMany", "spec.groups")]
    obj["spec"]["groups"].pop()
    assert engine.validate(engine.Request.for_object(obj), cfg).allowed


def test_lws_mutation_leaves_scheduling_alone():
    obj = lws({"schedulingPolicy": {"gang": {}}})
    assert engine.mutate(engine.Request.for_object(obj), CFG).patch is None


# ---------------------------------------------------------------- found in review: each a regression test

def _target(**group):
    return config_mod.from_dict({"targets": [{"group": "g.io", "kind": "T", "groups": [group]}]})


@pytest.mark.parametrize("bad", [
    {"minCount": "any"},                                                          # no block path
    {"at": "spec.s", "gangIncompatible": [{"path": "spec.l[*].x", "equals": 1}]},
    {"at": "spec.s", "setOnce": "spec.l[*].s"},
])
def test_configs_that_would_crash_the_engine_are_refused(bad):
    with pytest.raises(config_mod.ConfigError):
        _target(**bad)
    with pytest.raises(config_mod.ConfigError):
        config_mod.from_dict({"targets": [{"group": "g.io", "kind": "T", "groups": [{"at": "spec.s"}],
                                           "checks": {"counts": [{"path": "spec.a[*].b", "exactly": 1, "when": "spec.c"}]}}]})


def test_min_count_unset_is_never_defaulted():
    cfg = _target(at="spec.scheduling", size="spec.replicas", minCount="unset")
    obj = {"apiVersion": "g.io/v1", "kind": "T", "metadata": {"name": "t"},
           "spec": {"replicas": 4, "scheduling": {"schedulingPolicy": {"gang": {}}}}}
    assert engine.mutate(engine.Request.for_object(obj), cfg).patch is None
    assert engine.validate(engine.Request.for_object(obj), cfg).allowed


def test_checks_match_list_items_by_name_on_update():
    cfg = config_mod.from_dict({"targets": [{"group": "g.io", "kind": "T", "groups": [{"at": "spec.s"}], "checks": {
        "exclusive": [{"either": ["spec.items[*].a"], "or": ["spec.items[*].b"]}],
        "immutable": ["spec.items[*].image"]}}]})

    def obj(*items):
        return {"apiVersion": "g.io/v1", "kind": "T", "metadata": {"name": "t"}, "spec": {"items": list(items)}}
    x, y = {"name": "x", "image": "1"}, {"name": "y", "a": 1, "b": 2, "image": "2"}
    stored = obj(x, y)
    assert errors_with(cfg, obj(y), stored) == set()                             # x removed, y's old violation unchanged
    assert errors_with(cfg, obj(x, y, {"name": "z", "image": "3"}), stored) == set()     # a new item is not a change
    assert errors_with(cfg, obj(x, {**y, "image": "9"}), stored) == {("Invalid", "spec.items[1].image")}


def errors_with(cfg, obj, old=None):
    v = engine.validate(engine.Request.for_object(obj, old), cfg)
    return {(e.type, str(e.field)) for e in v.errors}


def test_max_groups_ratchets():
    cfg = _target(at="spec.groups[*].scheduling", maxGroups=8)
    obj = {"apiVersion": "g.io/v1", "kind": "T", "metadata": {"name": "m"},
           "spec": {"groups": [{"name": f"g{i}", "scheduling": {"schedulingPolicy": {"basic": {}}}} for i in range(9)]}}
    changed = copy.deepcopy(obj)
    changed["metadata"]["finalizers"] = []
    assert errors_with(cfg, changed, obj) == set()
    grown = copy.deepcopy(obj)
    grown["spec"]["groups"].append({"name": "g9", "scheduling": {"schedulingPolicy": {"basic": {}}}})
    assert errors_with(cfg, grown, obj) == {("TooMany", "spec.groups")}


def test_unfrozen_blocks_are_judged_one_by_one():
    cfg = config_mod.from_dict({"profiles": ["leaderworkerset"], "limits": {"allowedTopologyKeys": ["a.io/rack"]}})
    stored = lws({"schedulingPolicy": G(4), "schedulingConstraints": {"topology": [{"key": "a.io/zone"}]}})
    scaled = lws({"schedulingPolicy": G(8), "schedulingConstraints": {"topology": [{"key": "a.io/zone"}]}}, size=8)
    assert errors_with(cfg, scaled, stored) == set()
    moved = lws({"schedulingPolicy": G(4), "schedulingConstraints": {"topology": [{"key": "a.io/zone2"}]}})
    assert errors_with(cfg, moved, stored) == {("NotSupported", f"{S}.schedulingConstraints.topology[0].key")}


def test_reference_rules_see_what_an_update_introduces():
    two = [rj("a"), rj("b")]
    stored = jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a"]}, {"targetReplicatedJobs": ["b"]}]}, two, suspend=True,
                    suspended=True)
    dup = jobset({"replicatedJobs": [{"targetReplicatedJobs": ["a", "b"]}, {"targetReplicatedJobs": ["b"]}]}, two, suspend=True)
    assert ("Invalid", f"{S}.replicatedJobs[1].targetReplicatedJobs[0]") in errors(dup, stored)
    owned = jobset(None, [rj("a", group="x")], suspend=True, suspended=True)
    assert ("Forbidden", "spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup") in \
        errors(jobset({}, [rj("a", group="x")], suspend=True), owned)
