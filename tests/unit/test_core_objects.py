"""Workload, PodGroup and CompositePodGroup as kube-apiserver 1.37 judges them
(WL-1, WL-2, PG-1) plus the PodGroup-vs-Workload policy (PG-2)."""
import pytest

from webhook.view import ClusterUnavailable, StaticView
from tests.unit.helpers import (check, composite_podgroup, composite_template, config, found, podgroup, template,
                                workload)

T0 = "spec.podGroupTemplates[0]"
C0 = "spec.compositePodGroupTemplates[0]"
BASIC = {"basic": {}}


def nested(depth: int) -> dict:
    """A chain of `depth` composites with a leaf at the bottom."""
    node = composite_template(f"c{depth}", pgs=[template(f"leaf{depth}")])
    for d in range(depth - 1, 0, -1):
        node = composite_template(f"c{d}", cpgs=[node])
    return node


CREATE = [
    ("WL-1", "one template", workload([template()]), set()),
    ("WL-1", "v1alpha3 too", workload([template()], version="v1alpha3"), set()),
    ("WL-1", "no templates", workload(), {("Invalid", "spec")}),
    ("WL-1", "empty template list", workload([]), {("Invalid", "spec")}),
    ("WL-1", "both lists", workload([template("a")], composites=[composite_template("b", pgs=[template("c")])]),
     {("Invalid", "spec")}),
    ("WL-1", "8 templates", workload([template(f"t{i}") for i in range(8)]), set()),
    ("WL-1", "9 templates", workload([template(f"t{i}") for i in range(9)]), {("TooMany", "spec.podGroupTemplates")}),
    ("WL-1", "9 children in a composite", workload(composites=[composite_template("c", pgs=[template(f"t{i}") for i in range(9)])]),
     {("TooMany", f"{C0}.podGroupTemplates")}),
    ("WL-1", "template without name", workload([{"schedulingPolicy": BASIC}]), {("Required", f"{T0}.name")}),
    ("WL-1", "template name not a DNS label", workload([template("Workers")]), {("Invalid", f"{T0}.name")}),
    ("WL-1", "template name with a dot", workload([template("a.b")]), {("Invalid", f"{T0}.name")}),
    ("WL-1", "duplicate in one list", workload([template("a"), template("a")]),
     {("Duplicate", "spec.podGroupTemplates[1]")}),
    ("WL-1", "duplicate across the tree",
     workload(composites=[composite_template("a", pgs=[template("x")]), composite_template("b", pgs=[template("x")])]),
     {("Duplicate", "spec.compositePodGroupTemplates[1].podGroupTemplates[0].name")}),
    ("WL-1", "composite and leaf share a name",
     workload(composites=[composite_template("x", pgs=[template("x")])]),
     {("Duplicate", f"{C0}.podGroupTemplates[0].name")}),
    ("WL-1", "composite without children", workload(composites=[composite_template("c")]), {("Invalid", C0)}),
    ("WL-1", "depth 3 composites ok", workload(composites=[nested(3)]), set()),
    ("WL-1", "depth 4 composites rejected", workload(composites=[nested(4)]), {("Invalid", C0)}),
    ("WL-1", "one priority configuration",
     workload([template("a", priorityClassName="high"), template("b", priorityClassName="high")]), set()),
    ("WL-1", "two priority classes",
     workload([template("a", priorityClassName="high"), template("b", priorityClassName="low")]), {("Invalid", "spec")}),
    ("WL-1", "priority set on one template only", workload([template("a", priority=5), template("b")]),
     {("Invalid", "spec")}),
    ("WL-1", "priority above the user maximum", workload([template(priority=1_000_000_001)]),
     {("Invalid", f"{T0}.priority")}),
    ("WL-1", "negative priority allowed", workload([template(priority=-10)]), set()),
    ("WL-1", "priorityClassName not a subdomain", workload([template(priorityClassName="High")]),
     {("Invalid", f"{T0}.priorityClassName")}),
    ("WL-1", "preemptionPolicy unknown", workload([template(preemptionPolicy="Always")]),
     {("NotSupported", f"{T0}.preemptionPolicy")}),
    ("WL-1", "preemptionPolicy Never", workload([template(preemptionPolicy="Never")]), set()),
    ("WL-1", "controllerRef ok", workload([template()], controllerRef={"apiGroup": "batch", "kind": "Job", "name": "j"}),
     set()),
    ("WL-1", "controllerRef kind missing", workload([template()], controllerRef={"name": "j"}),
     {("Required", "spec.controllerRef.kind")}),
    ("WL-1", "controllerRef name with slash", workload([template()], controllerRef={"kind": "Job", "name": "a/b"}),
     {("Invalid", "spec.controllerRef.name")}),
    ("WL-1", "metadata.name not a subdomain", {**workload([template()]), "metadata": {"name": "Bad", "namespace": "ml"}},
     {("Invalid", "metadata.name")}),
    ("WL-1", "template gang minCount 0", workload([template(policy={"gang": {"minCount": 0}})]),
     {("Required", f"{T0}.schedulingPolicy.gang.minCount")}),
    ("WL-1", "composite gang minGroupCount 0",
     workload(composites=[composite_template("c", policy={"gang": {"minGroupCount": 0}}, pgs=[template()])]),
     {("Required", f"{C0}.schedulingPolicy.gang.minGroupCount")}),
    ("WL-1", "spec missing", {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                              "metadata": {"name": "w"}}, {("Required", "spec")}),
    ("DIS-2", "template all with basic", workload([template(policy=BASIC, disruptionMode={"all": {}})]),
     {("Invalid", f"{T0}.disruptionMode")}),
    ("DIS-2", "composite all with basic",
     workload(composites=[composite_template("c", policy=BASIC, pgs=[template()], disruptionMode={"all": {}})]),
     {("Invalid", f"{C0}.disruptionMode")}),
    # --- WL-2: feature gates
    ("WL-2", "constraints with TAS on", workload([template(schedulingConstraints={"topology": [{"key": "k"}]})]), set()),
    ("WL-2", "claims with DRA on",
     workload([template(resourceClaims=[{"name": "g", "resourceClaimName": "g"}])]), set()),
]


@pytest.mark.parametrize("rule,name,obj,expected", CREATE, ids=[f"{c[0]} {c[1]}" for c in CREATE])
def test_core_create(rule, name, obj, expected):
    assert found(check(obj)) == expected


GATES_OFF = [
    ("CompositePodGroup", workload(composites=[composite_template("c", pgs=[template()])]),
     {("Forbidden", "spec.compositePodGroupTemplates")}),
    ("TopologyAwareWorkloadScheduling", workload([template(schedulingConstraints={"topology": [{"key": "k"}]})]),
     {("Forbidden", f"{T0}.schedulingConstraints")}),
    ("DRAWorkloadResourceClaims", podgroup(resourceClaims=[{"name": "g", "resourceClaimName": "g"}]),
     {("Forbidden", "spec.resourceClaims")}),
    ("PodGroupPreemptionPolicy", podgroup(preemptionPolicy="Never"), {("Forbidden", "spec.preemptionPolicy")}),
    ("DRAWorkloadResourceClaims", workload([template(resourceClaims=[{"name": "g", "resourceClaimName": "g"}])]),
     {("Forbidden", f"{T0}.resourceClaims")}),
    ("CompositePodGroup", podgroup(parentCompositePodGroupName="p", workloadRef={"workloadName": "w", "templateName": "t"}),
     {("Forbidden", "spec.parentCompositePodGroupName")}),
]


@pytest.mark.parametrize("gate,obj,expected", GATES_OFF, ids=[f"WL-2 {g[0]} off" for g in GATES_OFF])
def test_WL_2_gate_off_forbids(gate, obj, expected):
    cfg = config(featureGates={"CompositePodGroup": True, "PodGroupPreemptionPolicy": True, gate: False})
    assert found(check(obj, cfg=cfg)) == expected
    assert found(check(obj, cfg=config(featureGates={"CompositePodGroup": True, "PodGroupPreemptionPolicy": True}))) == set()


def test_WL_2_union_lists_only_enabled_members():
    cfg = config(featureGates={"CompositePodGroup": False})
    err = check(workload(), cfg=cfg).errors[0]
    assert err.detail == "must specify one of: `podGroupTemplates`"
    assert check(workload()).errors[0].detail == "must specify one of: `podGroupTemplates`, `compositePodGroupTemplates`"


def test_WL_2_default_gates_from_rules_md():
    from webhook.config import Config
    cfg = Config()
    assert cfg.gate("GenericWorkload") and cfg.gate("TopologyAwareWorkloadScheduling") and cfg.gate("DRAWorkloadResourceClaims")
    assert not cfg.gate("CompositePodGroup") and not cfg.gate("PodGroupPreemptionPolicy")


UPDATE = [
    ("WL-1", "unchanged", workload([template()]), workload([template()]), set()),
    ("WL-1", "minCount changes in a template", workload([template(policy={"gang": {"minCount": 9}})]),
     workload([template()]), set()),
    ("WL-1", "template added", workload([template("a"), template("b")]), workload([template("a")]),
     {("Forbidden", "spec.podGroupTemplates[1]")}),
    ("WL-1", "template removed", workload([template("a")]), workload([template("a"), template("b")]),
     {("Forbidden", "spec.podGroupTemplates")}),
    ("WL-1", "template renamed", workload([template("b")]), workload([template("a")]),
     {("Forbidden", "spec.podGroupTemplates[0]"), ("Forbidden", "spec.podGroupTemplates")}),
    ("WL-1", "nested template added",
     workload(composites=[composite_template("c", pgs=[template("a"), template("b")])]),
     workload(composites=[composite_template("c", pgs=[template("a")])]),
     {("Forbidden", f"{C0}.podGroupTemplates[1]")}),
    ("WL-1", "template policy basic to gang", workload([template()]), workload([template(policy=BASIC)]),
     {("Invalid", f"{T0}.schedulingPolicy.basic"), ("Invalid", f"{T0}.schedulingPolicy.gang")}),
    ("WL-1", "template constraints changed", workload([template(schedulingConstraints={"topology": [{"key": "b"}]})]),
     workload([template(schedulingConstraints={"topology": [{"key": "a"}]})]), {("Invalid", f"{T0}.schedulingConstraints")}),
    ("WL-1", "template priority changed", workload([template(priority=2)]), workload([template(priority=1)]),
     {("Invalid", f"{T0}.priority")}),
    ("WL-1", "template disruption mode set", workload([template(disruptionMode={"single": {}})]), workload([template()]),
     {("Invalid", f"{T0}.disruptionMode")}),
    ("WL-1", "controllerRef set after create", workload([template()], controllerRef={"kind": "Job", "name": "j"}),
     workload([template()]), {("Invalid", "spec.controllerRef")}),
    ("WL-1", "controllerRef changed", workload([template()], controllerRef={"kind": "Job", "name": "k"}),
     workload([template()], controllerRef={"kind": "Job", "name": "j"}), {("Invalid", "spec.controllerRef")}),
    ("WL-1", "composite minGroupCount may change in a template",
     workload(composites=[composite_template("c", policy={"gang": {"minGroupCount": 2}}, pgs=[template()])]),
     workload(composites=[composite_template("c", pgs=[template()])]), set()),
    ("PG-1", "PodGroup unchanged", podgroup(), podgroup(), set()),
    ("PG-1", "PodGroup workloadRef changed", podgroup(workloadRef={"workloadName": "b", "templateName": "t"}),
     podgroup(workloadRef={"workloadName": "a", "templateName": "t"}), {("Invalid", "spec.workloadRef")}),
    ("PG-1", "PodGroup priorityClassName changed", podgroup(priorityClassName="b"), podgroup(priorityClassName="a"),
     {("Invalid", "spec.priorityClassName")}),
    ("PG-1", "PodGroup preemptionPolicy set", podgroup(preemptionPolicy="Never"), podgroup(),
     {("Invalid", "spec.preemptionPolicy")}),
    ("PG-1", "CompositePodGroup workloadRef changed",
     composite_podgroup(workloadRef={"workloadName": "x", "templateName": "pipeline"}), composite_podgroup(),
     {("Invalid", "spec.workloadRef")}),
    ("PG-1", "CompositePodGroup disruption changed", composite_podgroup(disruptionMode={"all": {}}), composite_podgroup(),
     {("Invalid", "spec.disruptionMode")}),
]


@pytest.mark.parametrize("rule,name,new,old,expected", UPDATE, ids=[f"{c[0]} {c[1]}" for c in UPDATE])
def test_core_update(rule, name, new, old, expected):
    assert found(check(new, old)) == expected


def test_PG_1_constraints_mutable_when_TAS_off():
    cfg = config(featureGates={"TopologyAwareWorkloadScheduling": False})
    new, old = podgroup(), podgroup(schedulingConstraints={"topology": [{"key": "a"}]})
    assert found(check(new, old, cfg=cfg)) == set()
    assert found(check(new, old)) == {("Invalid", "spec.schedulingConstraints")}


PG_CREATE = [
    ("PG-1", "with workloadRef", podgroup(workloadRef={"workloadName": "wl", "templateName": "workers"}), set()),
    ("PG-1", "workloadRef without templateName", podgroup(workloadRef={"workloadName": "wl"}),
     {("Required", "spec.workloadRef.templateName")}),
    ("PG-1", "templateName not a label", podgroup(workloadRef={"workloadName": "wl", "templateName": "a.b"}),
     {("Invalid", "spec.workloadRef.templateName")}),
    ("PG-1", "parent without workloadRef", podgroup(parentCompositePodGroupName="cpg"), {("Required", "spec.workloadRef")}),
    ("PG-1", "claim status names a spec claim",
     {**podgroup(resourceClaims=[{"name": "gpu", "resourceClaimName": "g"}]),
      "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "g-1"}]}}, set()),
    ("PG-1", "claim status names no spec claim",
     {**podgroup(resourceClaims=[{"name": "gpu", "resourceClaimName": "g"}]),
      "status": {"resourceClaimStatuses": [{"name": "nic"}]}}, {("Invalid", "status.resourceClaimStatuses[0].name")}),
    ("PG-1", "CompositePodGroup without workloadRef", composite_podgroup(workloadRef=None), {("Required", "spec.workloadRef")}),
    ("PG-1", "CompositePodGroup ok", composite_podgroup(), set()),
    ("PG-1", "PodGroup name too long", {**podgroup(), "metadata": {"name": "a" * 254}}, {("Invalid", "metadata.name")}),
]


@pytest.mark.parametrize("rule,name,obj,expected", PG_CREATE, ids=[f"{c[0]} {c[1]}" for c in PG_CREATE])
def test_podgroup_create(rule, name, obj, expected):
    assert found(check(obj)) == expected


# --- PG-2: a PodGroup made from a template must agree with it
WL = workload([template("workers", policy={"gang": {"minCount": 4}}, disruptionMode={"all": {}},
                        schedulingConstraints={"topology": [{"key": "rack"}]},
                        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpus"}])])
WL_NESTED = workload(composites=[composite_template("c", pgs=[template("deep", policy=BASIC)])])
REF = {"workloadName": "wl", "templateName": "workers"}
MATCHING = dict(workloadRef=REF, schedulingPolicy={"gang": {"minCount": 8}}, disruptionMode={"all": {}},
                schedulingConstraints={"topology": [{"key": "rack"}]},
                resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpus"}])
PG2 = [
    ("matching template (minCount may differ)", podgroup(**MATCHING), set()),
    ("other policy variant", podgroup(**{**MATCHING, "schedulingPolicy": BASIC, "disruptionMode": {"single": {}}}),
     {("Invalid", "spec.schedulingPolicy"), ("Invalid", "spec.disruptionMode")}),
    ("other constraints", podgroup(**{**MATCHING, "schedulingConstraints": None}), {("Invalid", "spec.schedulingConstraints")}),
    ("other claims", podgroup(**{**MATCHING, "resourceClaims": [{"name": "gpu", "resourceClaimName": "x"}]}),
     {("Invalid", "spec.resourceClaims")}),
    ("unknown template", podgroup(**{**MATCHING, "workloadRef": {"workloadName": "wl", "templateName": "nope"}}),
     {("Invalid", "spec.workloadRef.templateName")}),
    ("template nested in a composite, unset mode equals defaulted single",
     podgroup(workloadRef={"workloadName": "wl2", "templateName": "deep"}, schedulingPolicy=BASIC), set()),
]


@pytest.mark.parametrize("name,obj,expected", PG2, ids=[f"PG-2 {c[0]}" for c in PG2])
def test_PG_2_podgroup_against_workload(name, obj, expected):
    wl2 = {**WL_NESTED, "metadata": {"name": "wl2", "namespace": "ml"}}
    assert found(check(obj, view=StaticView([WL, wl2], authoritative=True))) == expected


def test_PG_2_missing_workload_is_a_warning():
    v = check(podgroup(**MATCHING), view=StaticView([], authoritative=True))
    assert v.allowed and any("Workload 'wl' not found" in w for w in v.warnings)
    offline = check(podgroup(**MATCHING), view=StaticView([], authoritative=False))
    assert offline.allowed and offline.warnings == []


def test_PG_2_cluster_unreachable_is_a_warning():
    class Down:
        authoritative = True

        def workload(self, ns, name):
            raise ClusterUnavailable("timed out after 2s")

        podgroup = workload

    v = check(podgroup(**MATCHING), view=Down())
    assert v.allowed and "timed out" in v.warnings[0]


def test_PG_2_switch_off():
    cfg = config(policies={"checkPodGroupAgainstWorkload": False})
    obj = podgroup(**{**MATCHING, "schedulingConstraints": None})
    assert check(obj, cfg=cfg, view=StaticView([WL], authoritative=True)).allowed


def test_WL_1_depth_error_detail():
    err = check(workload(composites=[nested(4)])).errors[0]
    assert err.detail == "maximum template hierarchy depth is 4"


def test_WL_1_below_the_maximum_depth_only_declarative_rules_run():
    """Past the depth limit kube-apiserver's hand-written validator stops (one
    depth error) while declarative validation still judges each deeper
    template's own fields; tree-wide name uniqueness is the hand-written part."""
    deep = nested(5)
    node = deep
    while node.get("compositePodGroupTemplates"):
        node = node["compositePodGroupTemplates"][0]
    node["podGroupTemplates"][0]["schedulingPolicy"] = {}          # a union with no member, at depth 6
    node["podGroupTemplates"].append(template("c1"))                # "c1" is also the top composite's name
    errors = {(e.type, str(e.field)) for e in check(workload(composites=[deep])).errors}
    leaf = "spec" + ".compositePodGroupTemplates[0]" * 5 + ".podGroupTemplates[0].schedulingPolicy"
    assert ("Invalid", "spec.compositePodGroupTemplates[0]") in errors          # the depth error, once
    assert ("Invalid", leaf) in errors                                           # the deep union error
    assert not any(t == "Duplicate" for t, _ in errors)


def test_POD_4_a_podgroup_whose_claims_no_label_joined_pod_can_reach_is_warned():
    from tests.unit.helpers import check, podgroup
    long_name = "g" * 70
    pg = podgroup(long_name, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}])
    v = check(pg)
    assert v.allowed and any("cannot be a value of the scheduling.k8s.io/pod-group label" in w for w in v.warnings)
    assert not any("label" in w for w in check(podgroup("g" * 63, resourceClaims=[
        {"name": "gpu", "resourceClaimTemplateName": "t"}])).warnings)
    assert not any("label" in w for w in check(podgroup(long_name)).warnings)     # no claims: nothing to reach
