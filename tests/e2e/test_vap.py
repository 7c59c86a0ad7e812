"""The VAP export judged against the webhook on a real API server: every
TrainJob case of the block tables (tests/unit/test_blocks.py, creates and
updates), sent as a VapJob (a copy of the TrainJob CRD the session webhook
does not see) once with only the generated ValidatingAdmissionPolicies and
once with only the webhook: the same verdict on every case, and a denial by
the policies names a field the webhook names. Cases the CRD's own schema
answers first are the same for both and still compared. The counts print."""
from __future__ import annotations

import copy
import time
from collections import Counter

import pytest

from tests.e2e import adopters, summary
from tests.e2e.rest import Api
from tests.unit import test_blocks
from tests.unit.helpers import TRAINJOB_TARGET
from webhook import config as config_mod
from webhook.vap.targets import export

GROUP, KIND, PLURAL, NS = "vap.example.com", "VapJob", "vapjobs", "vap-equality"
TARGET = {**TRAINJOB_TARGET, "group": GROUP, "kind": KIND, "versions": ["v1"]}
CONFIG = {"featureGates": adopters.ALL_GATES, "targets": [TARGET]}
BASE = f"/apis/{GROUP}/v1/namespaces/{NS}/{PLURAL}"


def _as_vapjob(obj: dict, name: str) -> dict:
    out = copy.deepcopy(obj)
    out["apiVersion"], out["kind"] = f"{GROUP}/v1", KIND
    out["metadata"] = {"name": name, "namespace": NS}
    return out


TJ = test_blocks.trainjob
CLAIM_A, CLAIM_B = {"name": "a", "resourceClaimName": "x"}, {"name": "b", "resourceClaimName": "y"}
# Cases where CEL and the engine could read JSON differently (found in review): empty lists, empty
# strings, duplicates after the first, integers beyond int32.
EXTRA_CREATES = [
    ("CLM-1 duplicates named at the later items", TJ({"resourceClaims": [CLAIM_A, CLAIM_B, {**CLAIM_B, "resourceClaimName": "z"},
                                                                          {**CLAIM_A, "resourceClaimName": "w"}]})),
    ("CLM-1 an empty reference is set (and malformed)", TJ({"resourceClaims": [{**CLAIM_A, "resourceClaimTemplateName": ""}]})),
    ("CLM-1 repeated empty and absent names", TJ({"resourceClaims": [{"name": "", "resourceClaimName": "x"},
                                                                    {"resourceClaimName": "y"}]})),
    ("POL-2 minCount beyond int32", TJ({"schedulingPolicy": {"gang": {"minCount": 3000000000}}}, replicas=None)),
]
EXTRA_UPDATES = [
    ("CLM-1 an empty claims list dropped", TJ({"schedulingPolicy": {"basic": {}}}), TJ({"schedulingPolicy": {"basic": {}},
                                                                                        "resourceClaims": []})),
    ("CLM-1 an empty claims list added", TJ({"schedulingPolicy": {"basic": {}}, "resourceClaims": []}),
     TJ({"schedulingPolicy": {"basic": {}}})),
    ("CON-1 an empty topology list dropped", TJ({"schedulingConstraints": {}}), TJ({"schedulingConstraints": {"topology": []}})),
]
CREATES = [(f"{r} {n}", o) for r, n, o, _ in test_blocks.CASES if o.get("kind") == "TrainJob"] + EXTRA_CREATES
UPDATES = [(f"{r} {n}", new, old) for r, n, new, old, _ in test_blocks.UPDATES if new.get("kind") == "TrainJob"] + \
    EXTRA_UPDATES
# The tables' other CRD-target cases: GroupJob, whose fan-out groups and composite stay the webhook's
# (`vap` lists them); counted and named, not silently dropped.
LEFT = [f"{c[0]} {c[1]}" for c in test_blocks.CASES if c[2].get("kind") == "GroupJob"] + \
    [f"{u[0]} {u[1]}" for u in test_blocks.UPDATES if u[2].get("kind") == "GroupJob"]
RESULTS: dict[str, dict] = {"vap": {}, "webhook": {}}
TALLY: Counter = Counter()


def _verdict(status: int, body: dict) -> tuple[bool, str, set]:
    if status in (200, 201):
        return True, "", set()
    causes = {c.get("field", "") for c in (body.get("details") or {}).get("causes") or []}
    return False, body.get("message", ""), causes


def run_cases(api: Api, side: str) -> None:
    for i, (case_id, obj) in enumerate(CREATES):
        RESULTS[side][case_id] = _verdict(*api.call("POST", f"{BASE}?dryRun=All", _as_vapjob(obj, f"c{i}")))
    for i, (case_id, new, old) in enumerate(UPDATES):
        name = f"u{i}-{side}"
        status, stored = api.call("POST", BASE, _as_vapjob(old, name))
        if status != 201:
            RESULTS[side][case_id] = ("old object not creatable", stored.get("message", ""), set())
            continue
        obj = _as_vapjob(new, name)
        obj["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        RESULTS[side][case_id] = _verdict(*api.call("PUT", f"{BASE}/{name}?dryRun=All", obj))
        api.call("DELETE", f"{BASE}/{name}")


@pytest.fixture(scope="module")
def judged(cluster, kubectl, tmp_path_factory):
    kubectl("apply", "-f", "-", stdin=adopters.trainjob_crd_copy(GROUP, KIND, PLURAL))
    kubectl("create", "namespace", NS, check=False)
    api = Api(cluster)
    probe = _as_vapjob(test_blocks.trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}), "probe")

    def denied() -> bool:
        return api.call("POST", f"{BASE}?dryRun=All", probe)[0] in (400, 403, 422)

    def wait(cond, what):
        deadline = time.monotonic() + 60
        while not cond():
            assert time.monotonic() < deadline, what
            time.sleep(0.3)

    wait(lambda: api.call("GET", BASE)[0] == 200, "the VapJob CRD is never served")
    # 1. only the generated policies
    cfg = config_mod.from_dict(CONFIG)
    policies = export(cfg, "vap-equality").objects
    assert policies, "nothing exported"
    kubectl.apply(policies)            # the API server checks every CEL expression (and its cost) here
    wait(denied, "the generated policy never took effect")
    run_cases(api, "vap")
    for d in policies:
        kubectl("delete", d["kind"].lower(), d["metadata"]["name"])
    wait(lambda: not denied(), "the policy never went away")
    # 2. only the webhook
    hook = adopters.ProfileWebhook(kubectl, str(tmp_path_factory.mktemp("vap")), "vap-equality", CONFIG).start(denied)
    try:
        run_cases(api, "webhook")
    finally:
        hook.stop()
    yield
    summary.add(f"VAP export vs webhook: {sum(TALLY.values())} cases ({TALLY['allowed']} allowed by both, "
                f"{TALLY['denied']} denied by both); {len(LEFT)} GroupJob cases left to the webhook (fan-out, "
                f"composite): {'; '.join(LEFT)}")


def test_the_tables_are_large():
    assert len(CREATES) >= 30 and len(UPDATES) >= 10


@pytest.mark.parametrize("case_id", [c[0] for c in CREATES] + [u[0] for u in UPDATES])
def test_policies_and_webhook_agree(judged, case_id):
    vap, hook = RESULTS["vap"][case_id], RESULTS["webhook"][case_id]
    assert vap[0] == hook[0], f"VAP: {vap[1][:300]} | webhook: {hook[1][:300]}"
    if vap[0] is False:
        fields = hook[2] or {""}
        assert any(f and f in vap[1] for f in fields) or vap[2] == hook[2], f"VAP: {vap[1][:400]} | webhook fields {fields}"
    TALLY["allowed" if vap[0] else "denied"] += 1


def test_a_worst_case_object_is_judged_within_the_cost_budget(judged, cluster, kubectl):
    """Long lists (1,000 topology entries, 200 claims: the CRD schema bounds neither here) are
    judged by the policies, never refused for exceeding kube-apiserver's CEL cost budget."""
    api = Api(cluster)
    cfg = config_mod.from_dict(CONFIG)
    policies = export(cfg, "vap-cost").objects
    kubectl.apply(policies)
    try:
        big = _as_vapjob(test_blocks.trainjob({
            "schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}},
            "schedulingConstraints": {"topology": [{"key": f"example.com/k{i}"} for i in range(1000)]},
            "resourceClaims": [{"name": f"c{i}", "resourceClaimName": f"claim-{i}"} for i in range(200)]}), "big")
        deadline = time.monotonic() + 60
        while True:
            status, body = api.call("POST", f"{BASE}?dryRun=All", big)
            if status != 201 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        message = body.get("message", "")
        assert status in (403, 422) and "budget" not in message.lower() and "exceeded" not in message.lower(), message[:500]
        assert "spec.scheduling.schedulingConstraints.topology" in message or "spec.scheduling.resourceClaims" in message
    finally:
        for d in policies:
            kubectl("delete", d["kind"].lower(), d["metadata"]["name"])


LOOSE_GROUP, LOOSE_KIND, LOOSE_PLURAL, LOOSE_NS = "loose.example.com", "LooseJob", "loosejobs", "vap-loose"
LOOSE_CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
             "metadata": {"name": f"{LOOSE_PLURAL}.{LOOSE_GROUP}"},
             "spec": {"group": LOOSE_GROUP, "scope": "Namespaced",
                      "names": {"kind": LOOSE_KIND, "plural": LOOSE_PLURAL, "singular": "loosejob"},
                      "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                          "type": "object", "properties": {"spec": {"type": "object",
                                                               "x-kubernetes-preserve-unknown-fields": True}}}}}]}}
# Wrong types a CRD that preserves unknown fields lets through: (case, spec, the field the denial must name).
WRONG_TYPES = [
    ("minCount a string", {"replicas": 4, "scheduling": {"schedulingPolicy": {"gang": {"minCount": "4"}}}},
     "spec.scheduling.schedulingPolicy.gang.minCount"),
    ("scheduling a list", {"replicas": 4, "scheduling": [{"schedulingPolicy": {"basic": {}}}]}, "spec.scheduling"),
    ("policy a string", {"replicas": 4, "scheduling": {"schedulingPolicy": "gang"}}, "spec.scheduling.schedulingPolicy"),
    ("gang a list", {"replicas": 4, "scheduling": {"schedulingPolicy": {"gang": [4]}}},
     "spec.scheduling.schedulingPolicy.gang"),
    ("replicas a string", {"replicas": "8", "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}, "spec.replicas"),
    ("claims a map", {"replicas": 1, "scheduling": {"resourceClaims": {"name": "a"}}}, "spec.scheduling.resourceClaims"),
    ("a claim a string", {"replicas": 1, "scheduling": {"resourceClaims": ["a"]}}, "spec.scheduling.resourceClaims"),
    ("topology a map", {"replicas": 1, "scheduling": {"schedulingConstraints": {"topology": {"key": "k"}}}},
     "spec.scheduling.schedulingConstraints.topology"),
    ("disruption mode all a string", {"replicas": 1, "scheduling": {"disruptionMode": {"all": "yes"}}},
     "spec.scheduling.disruptionMode.all"),
]


def test_wrong_typed_values_are_denied_naming_the_field_not_the_cel_expression(cluster, kubectl):
    """With a CRD that preserves unknown fields, a wrong-typed value reaches the policies: the
    denial names the field (as the webhook's shape check does), never a CEL runtime error."""
    from webhook import engine
    kubectl.apply(LOOSE_CRD)
    kubectl("wait", "--for=condition=Established", f"crd/{LOOSE_PLURAL}.{LOOSE_GROUP}", "--timeout=60s")
    kubectl("create", "namespace", LOOSE_NS, check=False)
    cfg = config_mod.from_dict({"targets": [{**TRAINJOB_TARGET, "group": LOOSE_GROUP, "kind": LOOSE_KIND,
                                             "versions": ["v1"]}]})
    policies = export(cfg, "vap-loose").objects
    api = Api(cluster)
    base = f"/apis/{LOOSE_GROUP}/v1/namespaces/{LOOSE_NS}/{LOOSE_PLURAL}"
    kubectl.apply(policies)
    try:
        probe = {"apiVersion": f"{LOOSE_GROUP}/v1", "kind": LOOSE_KIND, "metadata": {"name": "p", "namespace": LOOSE_NS},
                 "spec": WRONG_TYPES[0][1]}
        deadline = time.monotonic() + 60
        while api.call("POST", f"{base}?dryRun=All", probe)[0] in (200, 201):
            assert time.monotonic() < deadline, "the policies never took effect"
            time.sleep(0.3)
        for i, (case, spec, field) in enumerate(WRONG_TYPES):
            obj = {"apiVersion": f"{LOOSE_GROUP}/v1", "kind": LOOSE_KIND,
                   "metadata": {"name": f"w{i}", "namespace": LOOSE_NS}, "spec": spec}
            status, body = api.call("POST", f"{base}?dryRun=All", obj)
            message = body.get("message", "")
            assert status in (403, 422), f"{case}: admitted"
            assert "resulted in error" not in message and "no such overload" not in message, f"{case}: {message[:400]}"
            assert f"{field}: Invalid value" in message, f"{case}: {message[:400]}"
            verdict = engine.validate(engine.Request.for_object(obj), cfg)
            assert not verdict.allowed and any(str(e.field).startswith(field) for e in verdict.errors), \
                f"{case}: the webhook {'admits' if verdict.allowed else 'names ' + str([str(e.field) for e in verdict.errors])}"
    finally:
        for d in policies:
            kubectl("delete", d["kind"].lower(), d["metadata"]["name"], "--ignore-not-found")
