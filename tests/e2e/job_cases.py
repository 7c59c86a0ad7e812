"""The Job table: JobSpec `scheduling` (+ `parallelism`, `completions`) cases,
valid and invalid, for every block and every rule kube-apiserver 1.37 applies
to a Job with WorkloadWithJob on. Each case is (id, old or None, new): a
dict of the JobSpec fields the case sets. The verdicts are not written here:
kube-apiserver gives them."""
from __future__ import annotations

GANG = lambda n=None: {"gang": {} if n is None else {"minCount": n}}      # noqa: E731
BASIC = {"basic": {}}
ALL, SINGLE = {"all": {}}, {"single": {}}
TOPO = {"topology": [{"key": "topology.kubernetes.io/zone"}]}
CLAIM = {"name": "gpus", "resourceClaimTemplateName": "gpu-template"}
CLAIM2 = {"name": "shared", "resourceClaimName": "shared-claim"}


def s(**blocks) -> dict:
    """`{"scheduling": {...}}` with the blocks given."""
    return {"scheduling": blocks}


CREATES: list[tuple[str, dict]] = [
    ("no scheduling", {}),
    ("empty scheduling", s()),
    ("basic", s(schedulingPolicy=BASIC)),
    ("gang without minCount", s(schedulingPolicy=GANG())),
    ("gang 1, parallelism unset (1)", s(schedulingPolicy=GANG(1))),
    ("gang 2, parallelism unset (1)", s(schedulingPolicy=GANG(2))),
    ("gang 4 = parallelism 4", {**s(schedulingPolicy=GANG(4)), "parallelism": 4}),
    ("gang 5 > parallelism 4", {**s(schedulingPolicy=GANG(5)), "parallelism": 4}),
    ("gang 0", {**s(schedulingPolicy=GANG(0)), "parallelism": 4}),
    ("gang -1", {**s(schedulingPolicy=GANG(-1)), "parallelism": 4}),
    ("gang 1, parallelism 0", {**s(schedulingPolicy=GANG(1)), "parallelism": 0}),
    ("gang without minCount, parallelism 0", {**s(schedulingPolicy=GANG()), "parallelism": 0}),
    ("gang 2 within parallelism, completions 10", {**s(schedulingPolicy=GANG(2)), "parallelism": 2, "completions": 10}),
    ("gang 3 > parallelism 2, completions 5 (never completions)",
     {**s(schedulingPolicy=GANG(3)), "parallelism": 2, "completions": 5}),
    ("gang int32 max", {**s(schedulingPolicy=GANG(2**31 - 1)), "parallelism": 4}),
    ("basic and gang", s(schedulingPolicy={"basic": {}, "gang": {"minCount": 1}})),
    ("empty policy", s(schedulingPolicy={})),
    ("disruption single", s(disruptionMode=SINGLE)),
    ("disruption all with gang", {**s(schedulingPolicy=GANG(2), disruptionMode=ALL), "parallelism": 2}),
    ("disruption all with basic", s(schedulingPolicy=BASIC, disruptionMode=ALL)),
    ("disruption all, policy unset (basic)", s(disruptionMode=ALL)),
    ("disruption single and all", s(disruptionMode={"single": {}, "all": {}})),
    ("empty disruption", s(disruptionMode={})),
    ("disruption all, gang, minCount over parallelism",
     {**s(schedulingPolicy=GANG(3), disruptionMode=ALL), "parallelism": 2}),
    ("topology one key", s(schedulingConstraints=TOPO)),
    ("topology two keys", s(schedulingConstraints={"topology": [{"key": "a.io/x"}, {"key": "b.io/y"}]})),
    ("topology empty list", s(schedulingConstraints={"topology": []})),
    ("empty constraints", s(schedulingConstraints={})),
    ("topology key not a qualified name", s(schedulingConstraints={"topology": [{"key": "not a key!"}]})),
    ("topology key with a prefix", s(schedulingConstraints={"topology": [{"key": "example.com/rack"}]})),
    ("topology entry without key", s(schedulingConstraints={"topology": [{}]})),
    ("topology key too long", s(schedulingConstraints={"topology": [{"key": "k" * 64}]})),
    ("claim from a template", s(resourceClaims=[CLAIM])),
    ("claim by name", s(resourceClaims=[CLAIM2])),
    ("two claims", s(resourceClaims=[CLAIM, CLAIM2])),
    ("five claims", s(resourceClaims=[{"name": f"c{i}", "resourceClaimName": f"c{i}"} for i in range(5)])),
    ("four claims", s(resourceClaims=[{"name": f"c{i}", "resourceClaimName": f"c{i}"} for i in range(4)])),
    ("claim with both references", s(resourceClaims=[{**CLAIM, "resourceClaimName": "x"}])),
    ("claim without a reference", s(resourceClaims=[{"name": "gpus"}])),
    ("claim name not a DNS label", s(resourceClaims=[{**CLAIM, "name": "Not_A_Label"}])),
    ("claim template name not a DNS subdomain", s(resourceClaims=[{**CLAIM, "resourceClaimTemplateName": "Bad_Name"}])),
    ("claims empty list", s(resourceClaims=[])),
    ("every block valid", {**s(schedulingPolicy=GANG(2), schedulingConstraints=TOPO, disruptionMode=ALL,
                               resourceClaims=[CLAIM]), "parallelism": 4}),
    ("basic, all, two topology keys and a bad claim",
     s(schedulingPolicy=BASIC, disruptionMode=ALL, schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]},
       resourceClaims=[{"name": "x"}])),
    ("gang 0 with basic+all elsewhere", {**s(schedulingPolicy=GANG(0), disruptionMode=ALL), "parallelism": 1}),
    ("basic with single", s(schedulingPolicy=BASIC, disruptionMode=SINGLE)),
    ("gang 8 parallelism 8 single", {**s(schedulingPolicy=GANG(8), disruptionMode=SINGLE), "parallelism": 8}),
    # Found by the differential test (tests/e2e/test_upstream_oracle.py):
    ("claim reference \"\" is set", s(resourceClaims=[{**CLAIM, "resourceClaimName": ""}])),
    ("claim template reference \"\" alone", s(resourceClaims=[{"name": "gpus", "resourceClaimTemplateName": ""}])),
    # (Repeated claim names are not here: the JobSet CRD's list map refuses them before any webhook.)
]

UPDATES: list[tuple[str, dict, dict]] = [
    ("gang 2 -> 3 within parallelism 4", {**s(schedulingPolicy=GANG(2)), "parallelism": 4},
     {**s(schedulingPolicy=GANG(3)), "parallelism": 4}),
    ("gang 2 -> 5 over parallelism 4", {**s(schedulingPolicy=GANG(2)), "parallelism": 4},
     {**s(schedulingPolicy=GANG(5)), "parallelism": 4}),
    ("gang minCount unset", {**s(schedulingPolicy=GANG(2)), "parallelism": 4}, {**s(schedulingPolicy=GANG()), "parallelism": 4}),
    ("gang minCount set", {**s(schedulingPolicy=GANG()), "parallelism": 4}, {**s(schedulingPolicy=GANG(2)), "parallelism": 4}),
    ("gang minCount to 0", {**s(schedulingPolicy=GANG(2)), "parallelism": 4}, {**s(schedulingPolicy=GANG(0)), "parallelism": 4}),
    ("basic -> gang", s(schedulingPolicy=BASIC), s(schedulingPolicy=GANG(1))),
    ("gang -> basic", s(schedulingPolicy=GANG(1)), s(schedulingPolicy=BASIC)),
    ("scheduling added", {}, s(schedulingPolicy=BASIC)),
    ("empty scheduling added", {}, s()),
    ("scheduling removed", s(schedulingPolicy=BASIC), {}),
    ("policy added to empty scheduling", s(), s(schedulingPolicy=BASIC)),
    ("policy removed", s(schedulingPolicy=BASIC), s()),
    ("disruption single -> all", {**s(schedulingPolicy=GANG(1), disruptionMode=SINGLE)},
     {**s(schedulingPolicy=GANG(1), disruptionMode=ALL)}),
    ("disruption added", s(schedulingPolicy=BASIC), s(schedulingPolicy=BASIC, disruptionMode=SINGLE)),
    ("disruption removed", s(schedulingPolicy=BASIC, disruptionMode=SINGLE), s(schedulingPolicy=BASIC)),
    ("all added to basic", s(schedulingPolicy=BASIC), s(schedulingPolicy=BASIC, disruptionMode=ALL)),
    ("topology changed", s(schedulingConstraints=TOPO), s(schedulingConstraints={"topology": [{"key": "example.com/rack"}]})),
    ("topology added", s(schedulingPolicy=BASIC), s(schedulingPolicy=BASIC, schedulingConstraints=TOPO)),
    ("topology removed", s(schedulingConstraints=TOPO), s()),
    ("claims changed", s(resourceClaims=[CLAIM]), s(resourceClaims=[CLAIM2])),
    ("claims added", s(schedulingPolicy=BASIC), s(schedulingPolicy=BASIC, resourceClaims=[CLAIM])),
    ("claims removed", s(resourceClaims=[CLAIM]), s()),
    ("claims reordered", s(resourceClaims=[CLAIM, CLAIM2]), s(resourceClaims=[CLAIM2, CLAIM])),
    ("parallelism lowered below minCount", {**s(schedulingPolicy=GANG(4)), "parallelism": 4},
     {**s(schedulingPolicy=GANG(4)), "parallelism": 2}),
    ("parallelism raised", {**s(schedulingPolicy=GANG(4)), "parallelism": 4}, {**s(schedulingPolicy=GANG(4)), "parallelism": 8}),
    ("parallelism lowered to minCount", {**s(schedulingPolicy=GANG(2)), "parallelism": 4},
     {**s(schedulingPolicy=GANG(2)), "parallelism": 2}),
    ("unchanged", {**s(schedulingPolicy=GANG(2), disruptionMode=ALL, resourceClaims=[CLAIM]), "parallelism": 2},
     {**s(schedulingPolicy=GANG(2), disruptionMode=ALL, resourceClaims=[CLAIM]), "parallelism": 2}),
    ("basic -> gang over parallelism", s(schedulingPolicy=BASIC), s(schedulingPolicy=GANG(3))),
    ("minCount raised and parallelism raised together", {**s(schedulingPolicy=GANG(2)), "parallelism": 2},
     {**s(schedulingPolicy=GANG(6)), "parallelism": 6}),
    ("no scheduling, parallelism changed", {"parallelism": 2}, {"parallelism": 3}),
    # Found by the differential test (tests/e2e/test_upstream_oracle.py):
    ("policy added to empty scheduling with minCount 0", s(), s(schedulingPolicy=GANG(0))),
    ("scheduling added with minCount over parallelism", {"parallelism": 2}, {**s(schedulingPolicy=GANG(3)), "parallelism": 2}),
    ("scheduling added with all and basic", {}, s(schedulingPolicy=BASIC, disruptionMode=ALL)),
    ("five claims replace one", s(resourceClaims=[CLAIM]),
     s(resourceClaims=[{"name": f"c{i}", "resourceClaimName": f"c{i}"} for i in range(5)])),
]
