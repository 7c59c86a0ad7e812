"""webhook.builder: the Python workloadbuilder (its equality with upstream's Go, object by
object, is tests/e2e/test_builder_oracle.py). Here: the semantics the Go package documents,
and that validate() reports the engine's own errors for the same blocks."""
from __future__ import annotations

import pytest

from webhook import engine
from webhook.builder import (ALL_MODES, ALL_POLICIES, BASIC_POLICY, GANG_POLICY, Builder, BuildError,
                             BuildOptions, InvocationError, SchedulingConfig, SchedulingPolicy, WorkloadInput,
                             WorkloadItem, pod_group_name, template_name, workload_name)
from webhook.builder.names import fnv32a, safe_encode
from webhook.config import from_dict
from webhook.field import Path

OWNER = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llm", "uid": "u-1",
         "controller": True, "blockOwnerDeletion": True}
SPEC = Path("spec", "scheduling")


def opts(**kw) -> BuildOptions:
    base = dict(name="llm-wl", namespace="ml", owner=OWNER, allowed_policies=ALL_POLICIES,
                allowed_disruption_modes=ALL_MODES)
    return BuildOptions(**{**base, **kw})


def leaf(name: str = "workers", blocks: dict | None = None, **kw) -> WorkloadItem:
    return WorkloadItem(name, SPEC, SchedulingConfig(policy=SchedulingPolicy(basic=True)), WorkloadInput.leaf(blocks), **kw)


def test_a_leaf_builds_one_template_owned_and_referenced():
    wl = Builder(leaf(blocks={"schedulingPolicy": {"gang": {"minCount": 4}},
                              "schedulingConstraints": {"topology": [{"key": "rack"}]}}), opts()).build_workload()
    assert wl["apiVersion"] == "scheduling.k8s.io/v1beta1" and wl["kind"] == "Workload"
    assert wl["metadata"] == {"name": "llm-wl", "namespace": "ml", "ownerReferences": [OWNER]}
    assert wl["spec"]["controllerRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "TrainJob", "name": "llm"}
    assert wl["spec"]["podGroupTemplates"] == [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}},
                                                "schedulingConstraints": {"topology": [{"key": "rack"}]}}]


def test_defaults_merge_field_by_field_and_callbacks_run_on_a_copy():
    blocks = {"schedulingPolicy": {"gang": {}}}
    seen = []

    def default_min_count(cfg: SchedulingConfig) -> None:
        seen.append(cfg)
        if cfg.policy.gang is not None and cfg.policy.gang.min_count is None:
            cfg.policy.gang.min_count = 8
    default = SchedulingConfig(policy=SchedulingPolicy(basic=True), priority_class_name="high")
    item = WorkloadItem("w", SPEC, default, WorkloadInput.leaf(blocks), [default_min_count])
    tmpl = Builder(item, opts()).build_workload()["spec"]["podGroupTemplates"][0]
    assert tmpl["schedulingPolicy"] == {"gang": {"minCount": 8}} and tmpl["priorityClassName"] == "high"
    assert blocks == {"schedulingPolicy": {"gang": {}}} and default.policy == SchedulingPolicy(basic=True)


def test_a_gang_without_a_count_does_not_compile():
    with pytest.raises(BuildError, match="gang scheduling requires minCount to be set after resolution"):
        Builder(leaf(blocks={"schedulingPolicy": {"gang": {}}}), opts()).build_workload()


def test_a_workload_needs_an_owner_with_a_parsable_api_version():
    with pytest.raises(BuildError, match="must be owned by its controller"):
        Builder(leaf(), opts(owner=None)).build_workload()
    with pytest.raises(BuildError, match='invalid owner apiVersion "a/b/c"'):
        Builder(leaf(), opts(owner={**OWNER, "apiVersion": "a/b/c"})).build_workload()
    core = Builder(leaf(), opts(owner={**OWNER, "apiVersion": "v1"})).build_workload()
    assert "apiGroup" not in core["spec"]["controllerRef"]


def test_a_composite_compiles_its_children_and_materializes_both_kinds():
    root = WorkloadItem("trainer", SPEC, None, WorkloadInput.composite({"schedulingPolicy": {"gang": {"minGroupCount": 2}},
                                                                       "disruptionMode": {"all": {}}}),
                        children=[leaf("a", {"schedulingPolicy": {"gang": {"minCount": 2}}}), leaf("b")])
    b = Builder(root, opts())
    wl = b.build_workload()
    assert wl["spec"]["podGroupTemplates"] is None
    (cpgt,) = wl["spec"]["compositePodGroupTemplates"]
    assert [t["name"] for t in cpgt["podGroupTemplates"]] == ["a", "b"]
    cpg = b.new_composite_pod_group("cpg", "trainer")
    assert cpg["apiVersion"] == "scheduling.k8s.io/v1alpha3" and cpg["spec"]["disruptionMode"] == {"all": {}}
    assert cpg["spec"]["workloadRef"] == {"workloadName": "llm-wl", "templateName": "trainer"}
    # As upstream: NewPodGroup indexes the Workload's top-level templates only.
    with pytest.raises(InvocationError, match=r'podGroupTemplate "a" not found in workload "llm-wl" \(have \[\]\)'):
        b.new_pod_group("pg", "a")


def test_a_pod_group_copies_its_template_and_lives_beside_the_workload():
    b = Builder(leaf(blocks={"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
                             "disruptionMode": {"all": {}}, "schedulingPolicy": {"gang": {"minCount": 2}}}), opts())
    with pytest.raises(InvocationError, match="call BuildWorkload"):
        b.new_pod_group("pg", "workers")
    b.build_workload()
    pg = b.new_pod_group("pg", "workers")
    assert pg["metadata"] == {"name": "pg", "namespace": "ml", "ownerReferences": [OWNER]} and pg["status"] == {}
    assert pg["spec"] == {"workloadRef": {"workloadName": "llm-wl", "templateName": "workers"},
                          "schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}},
                          "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}
    pg["spec"]["schedulingPolicy"]["gang"]["minCount"] = 9
    assert b.build_workload()["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 2}}


def test_an_existing_workload_only_materializes():
    wl = Builder(leaf(), opts()).build_workload()
    b = Builder.from_existing_workload(wl, BuildOptions(owner=OWNER))
    assert b.new_pod_group("pg", "workers")["spec"]["workloadRef"]["workloadName"] == "llm-wl"
    with pytest.raises(BuildError):
        b.build_workload()
    with pytest.raises(InvocationError):
        b.validate()


@pytest.mark.parametrize("root,message", [
    (None, "missing root"),
    (leaf(""), "name cannot be empty"),
    (WorkloadItem("x", SPEC, None, WorkloadInput.leaf(None), children=[leaf("x")]), 'duplicate workload item name "x"'),
    (WorkloadItem("x", SPEC, None, WorkloadInput.leaf({"schedulingPolicy": {"basic": {}}}), children=[leaf()]),
     'composite workload item "x" sets leaf building block: policy'),
])
def test_a_broken_tree_is_the_callers_bug(root, message):
    with pytest.raises(InvocationError, match=message):
        Builder(root, opts()).validate()


def test_allow_lists_and_basic_with_all_on_the_resolved_config():
    item = leaf(blocks={"disruptionMode": {"all": {}}})      # no policy: the default basic
    errors = Builder(item, opts(allowed_policies=[GANG_POLICY], allowed_disruption_modes=[])).validate()
    got = {(e.type, str(e.field), e.detail.split(" (")[0]) for e in errors}
    assert ("Forbidden", "spec.scheduling.schedulingPolicy", "basic scheduling policy is not supported by this "
            "controller") in got
    assert ("Forbidden", "spec.scheduling.disruptionMode", "the disruptionMode `all` is not supported by this "
            "controller") in got
    dis2 = [e for e in errors if e.rule == "DIS-2"]
    assert len(dis2) == 1 and str(dis2[0].field) == "spec.scheduling.disruptionMode"
    assert Builder(item, opts(allowed_policies=[BASIC_POLICY])).validate() == dis2


CONFIG = from_dict({"targets": [{"group": "ex.io", "kind": "Thing", "groups": [{"at": "spec.scheduling"}]}]})


@pytest.mark.parametrize("blocks", [
    {"schedulingPolicy": {"gang": {"minCount": 0}}},
    {"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}},
    {"disruptionMode": {"single": {}, "all": {}}, "schedulingPolicy": {"gang": {"minCount": 1}}},
    {"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}},
    {"schedulingConstraints": {"topology": [{"key": "not a key!"}]}},
    {"resourceClaims": [{"name": "GPU", "resourceClaimName": "a"}, {"name": "GPU"}]},
    {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}},
    {"schedulingPolicy": {"gang": {"minCount": "3"}}},
])
def test_validate_reports_what_the_engine_reports_for_the_same_blocks(blocks):
    obj = {"apiVersion": "ex.io/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "d"},
           "spec": {"scheduling": blocks}}
    verdict = engine.validate(engine.Request("CREATE", "ex.io", "v1", "Thing", obj, None, "d"), CONFIG)
    mine = Builder(leaf(blocks=blocks), opts()).validate()
    assert mine and {e.identity for e in mine} == {e.identity for e in verdict.errors}


def test_names_are_the_job_controllers():
    assert safe_encode("0123") == "4567" and fnv32a(b"") == 0x811C9DC5
    assert template_name("trainer") == "trainer-pgt-0"
    name = workload_name("x" * 300, "uid")
    suffix = name.rsplit("-", 1)[1]
    assert len(name) == 253 and name == "x" * (253 - len(suffix) - 1) + "-" + suffix
    assert workload_name("job", "uid") != workload_name("job", "uid2")
    short = pod_group_name("wl", "t" * 300)
    assert len(short) == 253 and short.startswith("wl-" + "t" * 10)
    both = pod_group_name("w" * 200, "t" * 200)
    hash_len = len(both.rsplit("-", 1)[1])
    room = 253 - hash_len - 2
    assert both.startswith("w" * (room - room // 2) + "-" + "t" * (room // 2) + "-")
