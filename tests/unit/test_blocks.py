"""Building-block rules (POL-*, DIS-*, CON-*, CLM-*, CMP-*), judged both where
they are embedded in a CRD (TrainJob, GroupJob) and on core objects."""
import pytest

from tests.unit.helpers import check, composite_podgroup, config, found, groupjob, podgroup, trainjob

S = "spec.scheduling"
GANG4 = {"gang": {"minCount": 4}}
CLAIM = {"name": "gpu", "resourceClaimTemplateName": "gpus"}

CASES = [
    # --- POL-1: policy union
    ("POL-1", "basic ok", trainjob({"schedulingPolicy": {"basic": {}}}), set()),
    ("POL-1", "gang ok", trainjob({"schedulingPolicy": GANG4}), set()),
    ("POL-1", "missing policy in CRD resolves to basic", trainjob({}), set()),
    ("POL-1", "empty policy", trainjob({"schedulingPolicy": {}}), {("Invalid", f"{S}.schedulingPolicy")}),
    ("POL-1", "both members", trainjob({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}}),
     {("Invalid", f"{S}.schedulingPolicy")}),
    ("POL-1", "null members count as unset", trainjob({"schedulingPolicy": {"basic": None, "gang": None}}),
     {("Invalid", f"{S}.schedulingPolicy")}),
    ("POL-1", "PodGroup without policy", podgroup(schedulingPolicy=None), {("Invalid", "spec.schedulingPolicy")}),
    ("POL-1", "PodGroup both", podgroup(schedulingPolicy={"basic": {}, "gang": {"minCount": 1}}),
     {("Invalid", "spec.schedulingPolicy")}),
    ("POL-1", "policy of wrong type", trainjob({"schedulingPolicy": "gang"}), {("Invalid", f"{S}.schedulingPolicy")}),
    # --- POL-2: minCount
    ("POL-2", "CRD gang without minCount", trainjob({"schedulingPolicy": {"gang": {}}}), set()),
    ("POL-2", "CRD minCount 1", trainjob({"schedulingPolicy": {"gang": {"minCount": 1}}}), set()),
    ("POL-2", "CRD minCount 0 is Invalid", trainjob({"schedulingPolicy": {"gang": {"minCount": 0}}}),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-2", "CRD minCount negative", trainjob({"schedulingPolicy": {"gang": {"minCount": -3}}}),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-2", "PodGroup minCount 0 is Required", podgroup(schedulingPolicy={"gang": {"minCount": 0}}),
     {("Required", "spec.schedulingPolicy.gang.minCount")}),
    ("POL-2", "PodGroup minCount missing is Required", podgroup(schedulingPolicy={"gang": {}}),
     {("Required", "spec.schedulingPolicy.gang.minCount")}),
    ("POL-2", "PodGroup minCount negative is Invalid", podgroup(schedulingPolicy={"gang": {"minCount": -1}}),
     {("Invalid", "spec.schedulingPolicy.gang.minCount")}),
    ("POL-2", "minCount beyond int32", trainjob({"schedulingPolicy": {"gang": {"minCount": 2**31}}}, replicas=2**40),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-2", "minCount a string", trainjob({"schedulingPolicy": {"gang": {"minCount": "4"}}}),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-2", "minCount a bool", trainjob({"schedulingPolicy": {"gang": {"minCount": True}}}),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-2", "minCount a fraction", trainjob({"schedulingPolicy": {"gang": {"minCount": 1.5}}}),
     {("Invalid", f"{S}.schedulingPolicy.gang.minCount")}),
    ("POL-2", "PodGroup minCount int32 max", podgroup(schedulingPolicy={"gang": {"minCount": 2**31 - 1}}), set()),
    # --- DIS-1: disruption mode union
    ("DIS-1", "single", trainjob({"schedulingPolicy": GANG4, "disruptionMode": {"single": {}}}), set()),
    ("DIS-1", "all with gang", trainjob({"schedulingPolicy": GANG4, "disruptionMode": {"all": {}}}), set()),
    ("DIS-1", "empty mode", trainjob({"schedulingPolicy": GANG4, "disruptionMode": {}}),
     {("Invalid", f"{S}.disruptionMode")}),
    ("DIS-1", "both modes", trainjob({"schedulingPolicy": GANG4, "disruptionMode": {"single": {}, "all": {}}}),
     {("Invalid", f"{S}.disruptionMode")}),
    ("DIS-1", "mode a string", trainjob({"schedulingPolicy": GANG4, "disruptionMode": "all"}),
     {("Invalid", f"{S}.disruptionMode")}),
    ("DIS-1", "PodGroup without mode (defaulted upstream)", podgroup(disruptionMode=None), set()),
    ("DIS-1", "PodGroup empty mode", podgroup(disruptionMode={}), {("Invalid", "spec.disruptionMode")}),
    # --- DIS-2: all needs gang
    ("DIS-2", "CRD all with basic", trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}),
     {("Invalid", f"{S}.disruptionMode")}),
    ("DIS-2", "CRD all without policy", trainjob({"disruptionMode": {"all": {}}}), {("Invalid", f"{S}.disruptionMode")}),
    ("DIS-2", "CRD single with basic", trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}}}),
     set()),
    ("DIS-2", "PodGroup all with basic", podgroup(schedulingPolicy={"basic": {}}, disruptionMode={"all": {}}),
     {("Invalid", "spec.disruptionMode")}),
    ("DIS-2", "PodGroup all with gang", podgroup(disruptionMode={"all": {}}), set()),
    ("DIS-2", "CompositePodGroup all with basic",
     composite_podgroup(schedulingPolicy={"basic": {}}, disruptionMode={"all": {}}), {("Invalid", "spec.disruptionMode")}),
    ("DIS-2", "GroupJob composite all with basic",
     groupjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}, [{"replicas": 1}]),
     {("Invalid", f"{S}.disruptionMode")}),
    # --- CON-1: topology
    ("CON-1", "one topology key", trainjob({"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}),
     set()),
    ("CON-1", "empty constraints", trainjob({"schedulingConstraints": {}}), set()),
    ("CON-1", "two keys", trainjob({"schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]}}),
     {("TooMany", f"{S}.schedulingConstraints.topology")}),
    ("CON-1", "missing key", trainjob({"schedulingConstraints": {"topology": [{}]}}),
     {("Required", f"{S}.schedulingConstraints.topology[0].key")}),
    ("CON-1", "empty key", trainjob({"schedulingConstraints": {"topology": [{"key": ""}]}}),
     {("Required", f"{S}.schedulingConstraints.topology[0].key")}),
    ("CON-1", "key with two slashes", trainjob({"schedulingConstraints": {"topology": [{"key": "invalid/key/slash"}]}}),
     {("Invalid", f"{S}.schedulingConstraints.topology[0].key")}),
    ("CON-1", "uppercase prefix", trainjob({"schedulingConstraints": {"topology": [{"key": "Example.com/Foo"}]}}),
     {("Invalid", f"{S}.schedulingConstraints.topology[0].key")}),
    ("CON-1", "uppercase name is fine", trainjob({"schedulingConstraints": {"topology": [{"key": "example.com/Foo"}]}}),
     set()),
    ("CON-1", "64-char name", trainjob({"schedulingConstraints": {"topology": [{"key": "a" * 64}]}}),
     {("Invalid", f"{S}.schedulingConstraints.topology[0].key")}),
    ("CON-1", "253-char prefix ok", trainjob({"schedulingConstraints": {"topology": [{"key": ("a" * 63 + ".") * 3 + "a" * 61 + "/" + "b" * 63}]}}),
     set()),
    ("CON-1", "topology not a list", trainjob({"schedulingConstraints": {"topology": {"key": "a"}}}),
     {("Invalid", f"{S}.schedulingConstraints.topology")}),
    ("CON-1", "PodGroup two keys", podgroup(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}),
     {("TooMany", "spec.schedulingConstraints.topology")}),
    # --- CLM-1: resource claims
    ("CLM-1", "one claim", trainjob({"resourceClaims": [CLAIM]}), set()),
    ("CLM-1", "four claims", trainjob({"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(4)]}),
     set()),
    ("CLM-1", "five claims", trainjob({"resourceClaims": [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]}),
     {("TooMany", f"{S}.resourceClaims")}),
    ("CLM-1", "missing name", trainjob({"resourceClaims": [{"resourceClaimName": "x"}]}),
     {("Required", f"{S}.resourceClaims[0].name")}),
    ("CLM-1", "name not a DNS label", trainjob({"resourceClaims": [{"name": "GPU.0", "resourceClaimName": "x"}]}),
     {("Invalid", f"{S}.resourceClaims[0].name")}),
    ("CLM-1", "duplicate names", trainjob({"resourceClaims": [CLAIM, {"name": "gpu", "resourceClaimName": "y"}]}),
     {("Duplicate", f"{S}.resourceClaims[1]")}),
    ("CLM-1", "no reference", trainjob({"resourceClaims": [{"name": "gpu"}]}), {("Invalid", f"{S}.resourceClaims[0]")}),
    ("CLM-1", "both references",
     trainjob({"resourceClaims": [{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]}),
     {("Invalid", f"{S}.resourceClaims[0]")}),
    ("CLM-1", "reference not a subdomain", trainjob({"resourceClaims": [{"name": "gpu", "resourceClaimName": "Bad_Name"}]}),
     {("Invalid", f"{S}.resourceClaims[0].resourceClaimName")}),
    ("CLM-1", "template reference dotted ok",
     trainjob({"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpus.v2"}]}), set()),
    ("CLM-1", "claim of wrong type", trainjob({"resourceClaims": ["gpu"]}), {("Invalid", f"{S}.resourceClaims[0]")}),
    ("CLM-1", "PodGroup five claims",
     podgroup(resourceClaims=[{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]),
     {("TooMany", "spec.resourceClaims")}),
    # --- CMP-1: composite policy
    ("CMP-1", "composite gang ok", groupjob({"schedulingPolicy": {"gang": {"minGroupCount": 2}}},
                                           [{"replicas": 1}, {"replicas": 2}]), set()),
    ("CMP-1", "composite gang without count in CRD", groupjob({"schedulingPolicy": {"gang": {}}}, [{"replicas": 1}]),
     set()),
    ("CMP-1", "composite count 0 in CRD is Invalid",
     groupjob({"schedulingPolicy": {"gang": {"minGroupCount": 0}}}, [{"replicas": 1}]),
     {("Invalid", f"{S}.schedulingPolicy.gang.minGroupCount")}),
    ("CMP-1", "composite empty policy", groupjob({"schedulingPolicy": {}}, [{"replicas": 1}]),
     {("Invalid", f"{S}.schedulingPolicy")}),
    ("CMP-1", "composite without children", groupjob({"schedulingPolicy": {"basic": {}}}, []),
     {("Invalid", "spec.replicatedJobs")}),
    ("CMP-1", "children not a list", groupjob({"schedulingPolicy": {"basic": {}}}, {"a": 1}),
     {("Invalid", "spec.replicatedJobs")}),
    ("CMP-1", "CompositePodGroup count 0 is Required", composite_podgroup(schedulingPolicy={"gang": {"minGroupCount": 0}}),
     {("Required", "spec.schedulingPolicy.gang.minGroupCount")}),
    ("CMP-1", "CompositePodGroup count negative", composite_podgroup(schedulingPolicy={"gang": {"minGroupCount": -2}}),
     {("Invalid", "spec.schedulingPolicy.gang.minGroupCount")}),
    ("CMP-1", "CompositePodGroup no policy", composite_podgroup(schedulingPolicy=None),
     {("Invalid", "spec.schedulingPolicy")}),
]


@pytest.mark.parametrize("rule,name,obj,expected", CASES, ids=[f"{c[0]} {c[1]}" for c in CASES])
def test_block_create(rule, name, obj, expected):
    assert found(check(obj)) == expected


UPDATES = [
    # --- POL-4: variant frozen, minCount mutable
    ("POL-4", "CRD minCount raised within replicas", trainjob({"schedulingPolicy": {"gang": {"minCount": 4}}}, replicas=8),
     trainjob({"schedulingPolicy": {"gang": {"minCount": 2}}}, replicas=8), set()),
    ("POL-4", "CRD basic to gang", trainjob({"schedulingPolicy": GANG4}), trainjob({"schedulingPolicy": {"basic": {}}}),
     {("Invalid", f"{S}.schedulingPolicy")}),
    ("POL-4", "CRD gang to basic", trainjob({"schedulingPolicy": {"basic": {}}}), trainjob({"schedulingPolicy": GANG4}),
     {("Invalid", f"{S}.schedulingPolicy")}),
    ("POL-4", "CRD policy added", trainjob({"schedulingPolicy": GANG4}), trainjob({}),
     {("Invalid", f"{S}.schedulingPolicy")}),
    ("POL-4", "CRD policy removed", trainjob({}), trainjob({"schedulingPolicy": GANG4}),
     {("Invalid", f"{S}.schedulingPolicy")}),
    ("POL-4", "PodGroup minCount changes", podgroup(schedulingPolicy={"gang": {"minCount": 5}}), podgroup(), set()),
    ("POL-4", "PodGroup gang to basic", podgroup(schedulingPolicy={"basic": {}}), podgroup(),
     {("Invalid", "spec.schedulingPolicy.basic"), ("Invalid", "spec.schedulingPolicy.gang")}),
    ("POL-4", "PodGroup basic to gang", podgroup(), podgroup(schedulingPolicy={"basic": {}}),
     {("Invalid", "spec.schedulingPolicy.basic"), ("Invalid", "spec.schedulingPolicy.gang")}),
    ("POL-4", "PodGroup minCount to 0 still checked", podgroup(schedulingPolicy={"gang": {"minCount": 0}}), podgroup(),
     {("Required", "spec.schedulingPolicy.gang.minCount")}),
    ("POL-4", "CompositePodGroup minGroupCount frozen",
     composite_podgroup(schedulingPolicy={"gang": {"minGroupCount": 3}}), composite_podgroup(),
     {("Invalid", "spec.schedulingPolicy")}),
    # --- DIS-3
    ("DIS-3", "CRD mode changed",
     trainjob({"schedulingPolicy": GANG4, "disruptionMode": {"all": {}}}),
     trainjob({"schedulingPolicy": GANG4, "disruptionMode": {"single": {}}}), {("Invalid", f"{S}.disruptionMode")}),
    ("DIS-3", "CRD mode added", trainjob({"schedulingPolicy": GANG4, "disruptionMode": {"single": {}}}),
     trainjob({"schedulingPolicy": GANG4}), {("Invalid", f"{S}.disruptionMode")}),
    ("DIS-3", "CRD mode removed", trainjob({"schedulingPolicy": GANG4}),
     trainjob({"schedulingPolicy": GANG4, "disruptionMode": {"single": {}}}), {("Invalid", f"{S}.disruptionMode")}),
    ("DIS-3", "PodGroup mode changed", podgroup(disruptionMode={"all": {}}), podgroup(), {("Invalid", "spec.disruptionMode")}),
    ("DIS-3", "unchanged mode", podgroup(), podgroup(), set()),
    # --- CON-1 / CLM-1 immutability
    ("CON-1", "CRD constraints changed", trainjob({"schedulingConstraints": {"topology": [{"key": "b"}]}}),
     trainjob({"schedulingConstraints": {"topology": [{"key": "a"}]}}), {("Invalid", f"{S}.schedulingConstraints")}),
    ("CON-1", "PodGroup constraints added", podgroup(schedulingConstraints={"topology": [{"key": "a"}]}), podgroup(),
     {("Invalid", "spec.schedulingConstraints")}),
    ("CLM-1", "CRD claims changed", trainjob({"resourceClaims": [CLAIM, {"name": "nic", "resourceClaimName": "n"}]}),
     trainjob({"resourceClaims": [CLAIM]}), {("Invalid", f"{S}.resourceClaims")}),
    ("CLM-1", "PodGroup claims removed", podgroup(), podgroup(resourceClaims=[CLAIM]), {("Invalid", "spec.resourceClaims")}),
    ("CLM-1", "empty list equals no list", podgroup(resourceClaims=[]), podgroup(), set()),
    # --- ratcheting: an invalid value already stored does not block other updates
    ("DIS-2", "stored all+basic not re-judged when unchanged",
     trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}, image="v2"),
     trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}), set()),
]


@pytest.mark.parametrize("rule,name,new,old,expected", UPDATES, ids=[f"{c[0]} {c[1]}" for c in UPDATES])
def test_block_update(rule, name, new, old, expected):
    assert found(check(new, old)) == expected


def test_DIS_2_detail_names_both_fields():
    err = check(trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})).errors[0]
    assert str(err.field) == "spec.scheduling.disruptionMode"
    assert "gang" in err.detail and "spec.scheduling.schedulingPolicy" in err.detail


def test_DIS_2_switch_off():
    cfg = config(policies={"forbidAllWithBasic": False})
    assert found(check(trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}), cfg=cfg)) == set()


def test_POL_1_union_details_mirror_upstream():
    none = check(podgroup(schedulingPolicy={})).errors[0]
    both = check(podgroup(schedulingPolicy={"basic": {}, "gang": {"minCount": 1}})).errors[0]
    assert none.detail == "must specify one of: `basic`, `gang`"
    assert both.detail == "must specify exactly one of: `basic`, `gang`"


def test_POL_3_max_min_count_caps_everywhere():
    cfg = config(limits={"maxMinCount": 100})
    assert found(check(podgroup(schedulingPolicy={"gang": {"minCount": 101}}), cfg=cfg)) == {
        ("Invalid", "spec.schedulingPolicy.gang.minCount")}
    assert found(check(podgroup(schedulingPolicy={"gang": {"minCount": 100}}), cfg=cfg)) == set()
    assert found(check(trainjob({"schedulingPolicy": {"gang": {"minCount": 101}}}, replicas=500), cfg=cfg)) == {
        ("Invalid", f"{S}.schedulingPolicy.gang.minCount")}


def test_CON_1_allowed_topology_keys():
    cfg = config(limits={"allowedTopologyKeys": ["topology.kubernetes.io/rack"]})
    ok = trainjob({"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}})
    bad = trainjob({"schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]}})
    assert found(check(ok, cfg=cfg)) == set()
    errs = check(bad, cfg=cfg).errors
    assert [(e.type, str(e.field)) for e in errs] == [("NotSupported", f"{S}.schedulingConstraints.topology[0].key")]
    assert "topology.kubernetes.io/rack" in errs[0].detail
