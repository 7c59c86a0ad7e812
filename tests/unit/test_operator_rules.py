"""JobSet's and LeaderWorkerSet's own scheduling rules (JS-1…6, LWS-1…6 in
docs/profiles.md), as their webhooks state them at the pinned commits
(../shared/adopters/SOURCES.md): each case is the exact line the operator
prints, `field: Type: value: message`, so the error type, the path, the bad
value and the text are all pinned. The same objects meet the real CRDs through
kubectl in tests/e2e/test_adopters.py."""
from __future__ import annotations

import copy
import json

import pytest

from webhook import config as config_mod
from webhook import engine
from webhook.admission import review

CFG = config_mod.from_dict({"profiles": ["jobset", "leaderworkerset"]})
POD = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
UNSET = object()


def job(name, prio=None, parallelism=2, depends=None, group=None):
    pod = copy.deepcopy(POD)
    if prio is not None:
        pod["priorityClassName"] = prio
    if group is not None:
        pod["schedulingGroup"] = {"podGroupName": group}
    out = {"name": name, "replicas": 1, "template": {"spec": {"parallelism": parallelism, "template": {"spec": pod}}}}
    if depends:
        out["dependsOn"] = [{"name": depends, "status": "Ready"}]
    return out


def js(scheduling=UNSET, jobs=UNSET, order=None, suspend=None, suspended=None):
    """A JobSet of `jobs` (default a and b, 2 pods each); `suspended`: the Suspended condition's status."""
    spec = {"replicatedJobs": [job("a"), job("b")] if jobs is UNSET else jobs}
    if jobs is None:
        del spec["replicatedJobs"]
    if scheduling is not UNSET:
        spec["scheduling"] = scheduling
    if order:
        spec["startupPolicy"] = {"startupPolicyOrder": order}
    if suspend is not None:
        spec["suspend"] = suspend
    out = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js", "namespace": "ml"},
           "spec": spec}
    if suspended is not None:
        out["status"] = {"conditions": [{"type": "Suspended", "status": suspended, "reason": "JobSetSuspended",
                                         "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    return out


def pod_template(prio=None, group=None, claims=None):
    spec = copy.deepcopy(POD)
    for key, value in (("priorityClassName", prio), ("schedulingGroup", group and {"podGroupName": group}),
                       ("resourceClaims", claims)):
        if value is not None:
            spec[key] = value
    return {"spec": spec}


def lws(scheduling=UNSET, leader=None, worker=None, annotations=None, owners=None, size=4):
    """`leader` / `worker`: pod_template(...) (no leader template by default)."""
    lwt = {"size": size, "workerTemplate": worker or pod_template()}
    if leader is not None:
        lwt["leaderTemplate"] = leader
    meta = {"name": "l", "namespace": "ml"}
    if annotations is not None:
        meta["annotations"] = annotations
    if owners is not None:
        meta["ownerReferences"] = owners
    spec = {"leaderWorkerTemplate": lwt}
    if scheduling is not UNSET:
        spec["scheduling"] = scheduling
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": meta, "spec": spec}


def said(obj, old=None, cfg=CFG) -> set[str]:
    return {str(e) for e in engine.validate(engine.Request.for_object(obj, old), cfg).errors}


G = lambda n: {"gang": {"minCount": n}}      # noqa: E731
S = "spec.scheduling"
PRIO = "template.spec.template.spec.priorityClassName"
TOP = "when top-level gang scheduling is used"
SHARED = "of the other ReplicatedJobs sharing this PodGroup"
SEQ = "cannot be set when DependsOn or InOrder StartupPolicy is used; use per-ReplicatedJob gang policies instead"
NO_RJ = "must contain at least one replicatedJob when scheduling is configured"
JOB = ("cannot be set together with schedulingPolicy, schedulingConstraints, disruptionMode, or resourceClaims on the same "
       "replicatedJobs entry; job replaces the single shared PodGroup those fields configure with one PodGroup per Job")
ZONE = {"topology": [{"key": "topology.kubernetes.io/zone"}]}
E = lambda *targets, **kw: {"targetReplicatedJobs": list(targets), **kw}      # noqa: E731

JOBSET = [
    # JS-1 (validateScheduling, jobset_webhook.go 864-878): one class under a JobSet-wide PodGroup, item 0 the reference.
    ("JS-1 same class", js({}, [job("a", "high"), job("b", "high")]), set()),
    ("JS-1 differs (policy gang by default)", js({"schedulingConstraints": ZONE}, [job("a", "high"), job("b", "low")]),
     {f'spec.replicatedJobs[1].{PRIO}: Invalid value: "low": must match "high" {TOP}'}),
    ("JS-1 unset is \"\", each item reported", js({"schedulingPolicy": {"gang": {}}}, [job("a", "high"), job("b"), job("c", "low")]),
     {f'spec.replicatedJobs[1].{PRIO}: Invalid value: "": must match "high" {TOP}',
      f'spec.replicatedJobs[2].{PRIO}: Invalid value: "low": must match "high" {TOP}'}),
    ("JS-1 basic: one PodGroup per job", js({"schedulingPolicy": {"basic": {}}}, [job("a", "high"), job("b", "low")]), set()),
    ("JS-1 InOrder: one PodGroup per job", js({}, [job("a", "high"), job("b", "low")], order="InOrder"), set()),
    ("JS-1 dependsOn: one PodGroup per job", js({}, [job("a", "high"), job("b", "low", depends="a")]), set()),
    ("JS-1 an empty policy is no top-level gang", js({"schedulingPolicy": {}}, [job("a", "high"), job("b", "low")]),
     {f"{S}.schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"}),
    ("JS-1 no scheduling", js(UNSET, [job("a", "high"), job("b", "low")]), set()),
    # JS-2 (jobset_webhook.go 929-941): the targets of one entry share a PodGroup and a class.
    ("JS-2 shared PodGroup differs", js({"replicatedJobs": [E("a", "b")]}, [job("a", "high"), job("b", "low")]),
     {f'{S}.replicatedJobs[0].targetReplicatedJobs[1]: Invalid value: "b": priorityClassName "low" must match "high" {SHARED}'}),
    ("JS-2 one entry each", js({"replicatedJobs": [E("a"), E("b")]}, [job("a", "high"), job("b", "low")]), set()),
    ("JS-2 at the position among valid targets (JobSet's index)", js({"replicatedJobs": [E("x", "a", "b")]},
                                                                     [job("a", "high"), job("b", "low")]),
     {f'{S}.replicatedJobs[0].targetReplicatedJobs[0]: Invalid value: "x": must be the name of an item of '
      'spec.replicatedJobs (TGT-7)',
      f'{S}.replicatedJobs[0].targetReplicatedJobs[1]: Invalid value: "b": priorityClassName "low" must match "high" {SHARED}'}),
    ("JS-2 per-Job PodGroups are independent", js({"replicatedJobs": [E("a", job={}), E("b")]},
                                                  [job("a", "high"), job("b", "low")]), set()),
    ("JS-2 a name an earlier entry took is not a member", js({"replicatedJobs": [E("b"), E("a", "b")]},
                                                            [job("a", "high"), job("b", "low")]),
     {f'{S}.replicatedJobs[1].targetReplicatedJobs[1]: Invalid value: "b": is named more than once '
      f'(first at {S}.replicatedJobs[0].targetReplicatedJobs[0]) (TGT-7)'}),
    # JS-3 (jobset_webhook.go 854-862; validateSchedulingGangMinCounts skips sequenced startup).
    ("JS-3 InOrder with minCount", js({"schedulingPolicy": G(2)}, order="InOrder"),
     {f"{S}.schedulingPolicy.gang.minCount: Invalid value: 2: {SEQ}"}),
    ("JS-3 dependsOn, minCount over the pods: that error alone", js({"schedulingPolicy": G(9)}, [job("a"), job("b", depends="a")]),
     {f"{S}.schedulingPolicy.gang.minCount: Invalid value: 9: {SEQ}"}),
    ("JS-3 InOrder, gang without minCount", js({"schedulingPolicy": {"gang": {}}}, order="InOrder"), set()),
    ("JS-3 InOrder, minCount 0 is unset", js({"schedulingPolicy": G(0)}, order="InOrder"), set()),
    ("JS-3 AnyOrder", js({"schedulingPolicy": G(2)}, order="AnyOrder"), set()),
    ("JS-3 InOrder, per-entry minCount", js({"replicatedJobs": [E("a", schedulingPolicy=G(2)), E("b")]}, order="InOrder"), set()),
    ("JS-3 AnyOrder keeps POL-3", js({"schedulingPolicy": G(5)}),
     {f"{S}.schedulingPolicy.gang.minCount: Invalid value: 5: must be less than or equal to Σ replicas × "
      "template.spec.parallelism of spec.replicatedJobs[*] (4) (POL-3)"}),
    # JS-4 (jobset_webhook.go 788-791): reported alone, JobSet returns there.
    ("JS-4 no replicatedJobs", js({}, None), {f"spec.replicatedJobs: Invalid value: null: {NO_RJ}"}),
    ("JS-4 empty list, entries not judged", js({"replicatedJobs": [E("a")]}, []), {f"spec.replicatedJobs: Invalid value: []: {NO_RJ}"}),
    ("JS-4 empty list, minCount not judged", js({"schedulingPolicy": G(3)}, []), {f"spec.replicatedJobs: Invalid value: []: {NO_RJ}"}),
    ("JS-4 no scheduling", js(UNSET, []), set()),
    # JS-6 (jobset_webhook.go 911-927): Invalid, for an entry with a valid first-taken target.
    ("JS-6 job and a policy", js({"replicatedJobs": [E("a", job={}, schedulingPolicy={"gang": {}})]}, [job("a")]),
     {f"{S}.replicatedJobs[0].job: Invalid value: true: {JOB}"}),
    ("JS-6 empty claims are none", js({"replicatedJobs": [E("a", job={"schedulingPolicy": G(2)}, resourceClaims=[])]}, [job("a")]),
     set()),
    ("JS-6 two targets and claims", js({"replicatedJobs": [E("a", "b", job={}, resourceClaims=[
        {"name": "g", "resourceClaimTemplateName": "t"}])]}),
     {f'{S}.replicatedJobs[0].targetReplicatedJobs: Invalid value: ["a","b"]: must target exactly one replicatedJob when job is set',
      f"{S}.replicatedJobs[0].job: Invalid value: true: {JOB}"}),
    ("JS-6 no valid target: not judged", js({"replicatedJobs": [E("x", job={}, schedulingPolicy={"gang": {}})]}, [job("a")]),
     {f'{S}.replicatedJobs[0].targetReplicatedJobs[0]: Invalid value: "x": must be the name of an item of '
      'spec.replicatedJobs (TGT-7)'}),
    ("JS-6 an empty policy counts", js({"replicatedJobs": [E("a", job={}, schedulingPolicy={})]}, [job("a")]),
     {f"{S}.replicatedJobs[0].job: Invalid value: true: {JOB}",
      f"{S}.replicatedJobs[0].schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"}),
]

IMMUTABLE = f'{S}: Invalid value: "": field is immutable'
JOBSET_UPDATES = [
    # JS-5 (ValidateUpdate, jobset_webhook.go 442-453): a change only while suspended, old and new, with the
    # stored object's Suspended condition True.
    ("JS-5 suspended with the condition", js({"schedulingPolicy": G(2)}, [job("a")], suspend=True),
     js({"schedulingPolicy": G(1)}, [job("a")], suspend=True, suspended="True"), set()),
    ("JS-5 no condition", js({"schedulingPolicy": G(2)}, [job("a")], suspend=True),
     js({"schedulingPolicy": G(1)}, [job("a")], suspend=True), {IMMUTABLE}),
    ("JS-5 condition False", js({"schedulingPolicy": G(2)}, [job("a")], suspend=True),
     js({"schedulingPolicy": G(1)}, [job("a")], suspend=True, suspended="False"), {IMMUTABLE}),
    ("JS-5 resumed in the same update", js({"schedulingPolicy": G(2)}, [job("a")], suspend=False),
     js({"schedulingPolicy": G(1)}, [job("a")], suspend=True, suspended="True"), {IMMUTABLE}),
    ("JS-5 only the new object suspended", js({"schedulingPolicy": G(2)}, [job("a")], suspend=True, suspended="True"),
     js({"schedulingPolicy": G(1)}, [job("a")]), {IMMUTABLE}),
    ("JS-5 added", js({"schedulingPolicy": G(2)}, [job("a")]), js(UNSET, [job("a")]), {IMMUTABLE}),
    ("JS-5 removed", js(UNSET, [job("a")]), js({"schedulingPolicy": G(2)}, [job("a")]), {IMMUTABLE}),
    ("JS-5 unchanged", js({"schedulingPolicy": G(2)}, [job("a")]), js({"schedulingPolicy": G(2)}, [job("a")]), set()),
    # Deliberately stricter (JS-5 in docs/profiles.md): the changed levels are judged as on create.
    ("JS-5 suspended change judged as a create", js({"schedulingPolicy": G(5)}, [job("a")], suspend=True),
     js({"schedulingPolicy": G(1)}, [job("a")], suspend=True, suspended="True"),
     {f"{S}.schedulingPolicy.gang.minCount: Invalid value: 5: must be less than or equal to Σ replicas × "
      "template.spec.parallelism of spec.replicatedJobs[*] (2) (POL-3)"}),
]

CLAIM = {"name": "gpu", "resourceClaimTemplateName": "gpu-tpl"}
EX = {"leaderworkerset.sigs.k8s.io/exclusive-topology": "topology.kubernetes.io/zone"}
GT, PC = "scheduling.k8s.io/group-template-name", "scheduling.k8s.io/parent-compositepodgroup"
OWN = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "p",
        "uid": "00000000-0000-0000-0000-000000000001", "controller": True}]
CLAIMS_IN = "must have a matching reference in {}.spec.resourceClaims"
LWS = [
    # LWS-1 (validateScheduling, leaderworkerset_webhook.go 239-241): once, at spec.scheduling.
    ("LWS-1 worker schedulingGroup", lws({}, worker=pod_template(group="x")),
     {f"{S}: Forbidden: managed pod templates must not set spec.schedulingGroup"}),
    ("LWS-1 both templates: one error", lws({}, leader=pod_template(group="x"), worker=pod_template(group="y")),
     {f"{S}: Forbidden: managed pod templates must not set spec.schedulingGroup"}),
    ("LWS-1 no scheduling", lws(UNSET, worker=pod_template(group="x")), set()),
    # LWS-2 (236-238): no leader template means the worker's.
    ("LWS-2 classes differ", lws({}, leader=pod_template("high"), worker=pod_template("low")),
     {f"{S}: Invalid value: null: leader and worker templates must use the same priorityClassName"}),
    ("LWS-2 leader unset is \"\"", lws({}, leader=pod_template(), worker=pod_template("low")),
     {f"{S}: Invalid value: null: leader and worker templates must use the same priorityClassName"}),
    ("LWS-2 no leader template", lws({}, worker=pod_template("low")), set()),
    ("LWS-2 same class", lws({}, leader=pod_template("low"), worker=pod_template("low")), set()),
    ("LWS-2 no scheduling", lws(UNSET, leader=pod_template("high"), worker=pod_template("low")), set()),
    # LWS-3 (validateSharedClaims, 246-268): an exact reference in each role (no leader template: the worker's, twice).
    ("LWS-3 both templates have it", lws({"resourceClaims": [CLAIM]}, leader=pod_template(claims=[CLAIM]),
                                         worker=pod_template(claims=[CLAIM])), set()),
    ("LWS-3 no leader template, the worker has it", lws({"resourceClaims": [CLAIM]}, worker=pod_template(claims=[CLAIM])), set()),
    ("LWS-3 no leader template, the worker lacks it", lws({"resourceClaims": [CLAIM]}),
     {f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + CLAIMS_IN.format("leaderTemplate"),
      f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + CLAIMS_IN.format("workerTemplate")}),
    ("LWS-3 the leader template lacks it", lws({"resourceClaims": [CLAIM]}, leader=pod_template(),
                                               worker=pod_template(claims=[CLAIM])),
     {f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + CLAIMS_IN.format("leaderTemplate")}),
    ("LWS-3 another reference kind", lws({"resourceClaims": [CLAIM]},
                                         worker=pod_template(claims=[{"name": "gpu", "resourceClaimName": "gpu-tpl"}])),
     {f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + CLAIMS_IN.format("leaderTemplate"),
      f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + CLAIMS_IN.format("workerTemplate")}),
    ("LWS-3 an empty reference is not an absent one", lws({"resourceClaims": [CLAIM]}, worker=pod_template(
        claims=[{**CLAIM, "resourceClaimName": ""}])),
     {f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + CLAIMS_IN.format("leaderTemplate"),
      f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + CLAIMS_IN.format("workerTemplate")}),
    # LWS-4 (211-230): the annotation counts when its value is not empty.
    ("LWS-4 gang by default", lws({}, annotations=EX),
     {f"{S}: Forbidden: gang scheduling cannot be combined with exclusive topology in alpha"}),
    ("LWS-4 basic with constraints", lws({"schedulingPolicy": {"basic": {}}, "schedulingConstraints": ZONE}, annotations=EX),
     {f"{S}.schedulingConstraints: Forbidden: workload topology constraints cannot be combined with exclusive topology in alpha"}),
    ("LWS-4 gang and constraints: both", lws({"schedulingPolicy": G(4), "schedulingConstraints": ZONE}, annotations=EX),
     {f"{S}: Forbidden: gang scheduling cannot be combined with exclusive topology in alpha",
      f"{S}.schedulingConstraints: Forbidden: workload topology constraints cannot be combined with exclusive topology in alpha"}),
    ("LWS-4 basic", lws({"schedulingPolicy": {"basic": {}}}, annotations=EX), set()),
    ("LWS-4 empty annotation", lws({"schedulingPolicy": G(4)}, annotations={"leaderworkerset.sigs.k8s.io/exclusive-topology": ""}),
     set()),
    ("LWS-4 no scheduling", lws(UNSET, annotations=EX), set()),
    # LWS-5 (180-197, provider kubernetes): the delegation annotations, present even when empty.
    ("LWS-5 parent without delegation", lws({}, annotations={PC: "cpg"}, owners=OWN),
     {f"metadata.annotations[{PC}]: Forbidden: requires the group-template-name delegation annotation"}),
    ("LWS-5 delegation without an owner", lws({}, annotations={GT: "tpl"}),
     {f"metadata.annotations[{GT}]: Forbidden: delegated scheduling requires a controller owner"}),
    ("LWS-5 an owner that is not the controller", lws({}, annotations={GT: "tpl", PC: "cpg"},
                                                     owners=[{**OWN[0], "controller": False}]),
     {f"metadata.annotations[{GT}]: Forbidden: delegated scheduling requires a controller owner"}),
    ("LWS-5 delegated", lws({}, annotations={GT: "tpl", PC: "cpg"}, owners=OWN), set()),
    ("LWS-5 empty values", lws({}, annotations={GT: "", PC: ""}, owners=OWN),
     {f"metadata.annotations[{GT}]: Required value: must name a parent Workload template",
      f"metadata.annotations[{PC}]: Required value: must name a parent CompositePodGroup"}),
    ("LWS-5 an empty parent without delegation: only the first", lws({}, annotations={PC: ""}),
     {f"metadata.annotations[{PC}]: Forbidden: requires the group-template-name delegation annotation"}),
    ("LWS-5 no scheduling", lws(UNSET, annotations={PC: "cpg"}), set()),
]

LWS_UPDATES = [
    # LWS-6 (143-148, 198-200): Forbidden; a removal alone, an addition with every create check.
    ("LWS-6 removed", lws(UNSET), lws({"schedulingPolicy": G(4)}), {f"{S}: Forbidden: cannot remove scheduling after creation"}),
    ("LWS-6 added", lws({"schedulingPolicy": G(4)}), lws(UNSET), {f"{S}: Forbidden: cannot add scheduling after creation"}),
    ("LWS-6 added with a wrong minCount: both", lws({"schedulingPolicy": G(3)}), lws(UNSET),
     {f"{S}: Forbidden: cannot add scheduling after creation",
      f"{S}.schedulingPolicy.gang.minCount: Invalid value: 3: must be equal to spec.leaderWorkerTemplate.size (4) (POL-3)"}),
    ("LWS-6 changed, kept", lws({"schedulingPolicy": G(4), "disruptionMode": {"all": {}}}), lws({"schedulingPolicy": G(4)}), set()),
    # Deliberately lenient (LWS ratcheting in docs/profiles.md): a stored violation the update does not touch.
    ("LWS-2 stored violation, unrelated update", lws({}, leader=pod_template("high"), worker=pod_template("low"), size=4),
     lws({}, leader=pod_template("high"), worker=pod_template("low"), size=2), set()),
    ("LWS-2 introduced by the update", lws({}, leader=pod_template("high"), worker=pod_template("low")),
     lws({}, leader=pod_template("low"), worker=pod_template("low")),
     {f"{S}: Invalid value: null: leader and worker templates must use the same priorityClassName"}),
]


@pytest.mark.parametrize("name,obj,expected", JOBSET + LWS, ids=[c[0] for c in JOBSET + LWS])
def test_operator_rule_on_create(name, obj, expected):
    assert said(obj) == expected


@pytest.mark.parametrize("name,obj,old,expected", JOBSET_UPDATES + LWS_UPDATES,
                         ids=[c[0] for c in JOBSET_UPDATES + LWS_UPDATES])
def test_operator_rule_on_update(name, obj, old, expected):
    assert said(obj, old) == expected


def test_operator_rules_are_mirrors_that_always_deny():
    """Their text is the operator's, with no rule id, so no enforcement setting relaxes them."""
    cfg = config_mod.from_dict({"profiles": ["jobset"], "enforcement": {"default": "warn"}})
    obj = js({"schedulingPolicy": G(2)}, order="InOrder")
    v = engine.validate(engine.Request.for_object(obj), cfg)
    assert [(e.rule, str(e.field)) for e in v.errors] == [(None, f"{S}.schedulingPolicy.gang.minCount")]


def test_the_webhook_answers_with_the_operators_type_and_path():
    """The AdmissionReview answer: one cause per error, the operator's reason and field."""
    obj = lws({"resourceClaims": [CLAIM]}, annotations={GT: "tpl"})
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u", "kind": {"group": "leaderworkerset.x-k8s.io", "version": "v1", "kind": "LeaderWorkerSet"},
        "operation": "CREATE", "name": "l", "namespace": "ml", "object": obj}}).encode()
    r = review.parse(body, "application/json")
    answer = review.respond(r.uid, engine.validate(r.request, CFG), r)["response"]
    assert not answer["allowed"] and answer["status"]["code"] == 422
    assert {(c["field"], c["reason"], c["message"]) for c in answer["status"]["details"]["causes"]} == {
        (f"metadata.annotations[{GT}]", "FieldValueForbidden", "Forbidden: delegated scheduling requires a controller owner"),
        (f"{S}.resourceClaims[0]", "FieldValueInvalid", 'Invalid value: "gpu": ' + CLAIMS_IN.format("leaderTemplate")),
        (f"{S}.resourceClaims[0]", "FieldValueInvalid", 'Invalid value: "gpu": ' + CLAIMS_IN.format("workerTemplate")),
    }
