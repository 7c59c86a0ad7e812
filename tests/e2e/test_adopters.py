"""The shipped profiles on the operators' real CRDs (../shared/adopters, loaded
with `kubectl create`) in the real API server, through kubectl: valid objects
are admitted unchanged, each rule refuses at the CRD's own field path (the
operators' own rules JS-1…6 and LWS-1…6 with the operator's error type, value
and text), server-side dry-run judges the same, updates follow each operator's
immutability (beside LWS's own CEL rule, without duplicated errors), and Pods
shaped like the ones these controllers create (spec.schedulingGroup already
set, no label) still get their PodGroup's claims."""
from __future__ import annotations

import copy
import time

import pytest
import yaml

from tests.e2e import adopters
from tests.unit.helpers import podgroup

NS = "adopters"
POD = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
G = lambda n: {"gang": {"minCount": n}}      # noqa: E731


def rj(name, replicas=1, parallelism=None, **extra):
    spec = {"template": copy.deepcopy(POD), **({"parallelism": parallelism} if parallelism is not None else {}), **extra}
    return {"name": name, "replicas": replicas, "template": {"spec": spec}}


def pod(prio=None, **spec):
    """A pod template; `prio`: its priorityClassName."""
    out = {"spec": {**copy.deepcopy(POD["spec"]), **spec}}
    if prio:
        out["spec"]["priorityClassName"] = prio
    return out


def prj(name, prio=None, **extra):
    """A replicated Job of 2 pods with a priority class."""
    out = rj(name, 1, 2, template=pod(prio))
    out.update(extra)
    return out


def jobset(name, scheduling=None, jobs=None, order=None, suspend=None):
    spec = {"replicatedJobs": [rj("a", 2, 3), rj("b", 1)] if jobs is None else jobs}     # 2×3 + 1 = 7 pods
    if scheduling is not None:
        spec["scheduling"] = scheduling
    if order:
        spec["startupPolicy"] = {"startupPolicyOrder": order}
    if suspend is not None:
        spec["suspend"] = suspend
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def lws(name, scheduling=None, size=4, startup=None, leader=None, worker=None, annotations=None, owners=None):
    spec = {"leaderWorkerTemplate": {"size": size, "workerTemplate": worker or copy.deepcopy(POD)}}
    if leader is not None:
        spec["leaderWorkerTemplate"]["leaderTemplate"] = leader
    if scheduling is not None:
        spec["scheduling"] = scheduling
    if startup:
        spec["startupPolicy"] = startup
    meta = {"name": name, "namespace": NS}
    if annotations:
        meta["annotations"] = annotations
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": meta, "spec": spec}


E = lambda *targets, **kw: {"targetReplicatedJobs": list(targets), **kw}      # noqa: E731
CLAIM = {"name": "gpu", "resourceClaimTemplateName": "gpu-tpl"}
EX = {"leaderworkerset.sigs.k8s.io/exclusive-topology": "topology.kubernetes.io/zone"}
GT, PC = "scheduling.k8s.io/group-template-name", "scheduling.k8s.io/parent-compositepodgroup"
OWN = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "p",
        "uid": "00000000-0000-0000-0000-000000000001", "controller": True}]
ZONE = {"topology": [{"key": "topology.kubernetes.io/zone"}]}


@pytest.fixture(scope="module")
def served(cluster, kubectl, tmp_path_factory):
    kubectl("create", "namespace", NS, check=False)
    adopters.install_crd(kubectl, adopters.JOBSET_WAS)
    adopters.install_crd(kubectl, adopters.LWS_WAS)
    bad = jobset("probe", {"schedulingPolicy": G(99)})

    def probe() -> bool:
        proc = kubectl.create(bad, "--dry-run=server", check=False)
        return proc.returncode != 0 and "spec.scheduling.schedulingPolicy.gang.minCount" in proc.stderr

    hook = adopters.ProfileWebhook(kubectl, str(tmp_path_factory.mktemp("adopters")), "adopters",
                                   {"featureGates": adopters.ALL_GATES, "profiles": ["jobset", "leaderworkerset"]})
    yield hook.start(probe)
    hook.stop()


def refused(kubectl, obj, *extra) -> str:
    proc = kubectl.create(obj, *extra, check=False)
    assert proc.returncode != 0, f"admitted: {obj['metadata']['name']}"
    return proc.stderr


VALID = [
    jobset("level1", {"schedulingPolicy": G(7), "disruptionMode": {"all": {}},
                      "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]}}),
    jobset("level2", {"replicatedJobs": [{"targetReplicatedJobs": ["a"], "schedulingPolicy": G(6),
                                          "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "gpu"}]},
                                         {"targetReplicatedJobs": ["b"]}]}),
    jobset("level3", {"replicatedJobs": [{"targetReplicatedJobs": ["a"], "job": {"schedulingPolicy": G(3)}},
                                         {"targetReplicatedJobs": ["b"], "schedulingPolicy": {"basic": {}}}]}),
    jobset("jobtemplate", None, [rj("a", 1, 4, scheduling={"schedulingPolicy": G(4), "disruptionMode": {"all": {}}})]),
    lws("lws-gang", {"schedulingPolicy": G(4), "disruptionMode": {"all": {}}}),
    lws("lws-default", {"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "gpu"}]},
        worker=pod(resourceClaims=[{"name": "gpus", "resourceClaimTemplateName": "gpu"}])),
    # The operators' own rules, on the valid side of each.
    jobset("js1-same-class", {"schedulingPolicy": G(4)}, [prj("a", "high"), prj("b", "high")]),
    jobset("js1-basic", {"schedulingPolicy": {"basic": {}}}, [prj("a", "high"), prj("b", "low")]),
    jobset("js1-inorder", {"schedulingConstraints": ZONE}, [prj("a", "high"), prj("b", "low")], order="InOrder"),
    jobset("js2-separate", {"replicatedJobs": [E("a"), E("b")]}, [prj("a", "high"), prj("b", "low")]),
    jobset("js2-per-job", {"replicatedJobs": [E("a", job={}), E("b")]}, [prj("a", "high"), prj("b", "low")]),
    jobset("js3-entry-min", {"replicatedJobs": [E("a", schedulingPolicy=G(2)), E("b")]}, [prj("a"), prj("b")], order="InOrder"),
    jobset("js3-inorder-zero", {"schedulingPolicy": G(0)}, [prj("a"), prj("b")], order="InOrder"),
    jobset("js6-empty-claims", {"replicatedJobs": [E("a", job={"schedulingPolicy": G(2)}, resourceClaims=[])]}, [prj("a")]),
    lws("lws2-no-leader", {}, worker=pod("low")),
    lws("lws2-same-class", {}, leader=pod("low"), worker=pod("low")),
    lws("lws3-claims", {"resourceClaims": [CLAIM]}, leader=pod(resourceClaims=[CLAIM]), worker=pod(resourceClaims=[CLAIM])),
    lws("lws4-basic", {"schedulingPolicy": {"basic": {}}}, annotations=EX),
    lws("lws4-empty", {"schedulingPolicy": G(4)}, annotations={"leaderworkerset.sigs.k8s.io/exclusive-topology": ""}),
]


@pytest.mark.parametrize("obj", VALID, ids=[o["metadata"]["name"] for o in VALID])
def test_valid_objects_are_admitted_unchanged(served, kubectl, obj):
    assert kubectl.create(obj, "--dry-run=server", "-o", "json", check=False).returncode == 0
    kubectl.create(obj)
    kind = obj["kind"].lower()
    stored = kubectl.get(kind, obj["metadata"]["name"], NS)
    assert stored["spec"].get("scheduling") == obj["spec"].get("scheduling")
    if kind == "jobset":
        assert [j["template"]["spec"].get("scheduling") for j in stored["spec"]["replicatedJobs"]] == \
            [j["template"]["spec"].get("scheduling") for j in obj["spec"]["replicatedJobs"]]
    kubectl("delete", kind, obj["metadata"]["name"], "-n", NS)


S = "spec.scheduling"
INVALID = [
    (jobset("l1-over", {"schedulingPolicy": G(8)}), f"{S}.schedulingPolicy.gang.minCount: Invalid value: 8"),
    (jobset("l1-basic-all", {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}), f"{S}.disruptionMode: Invalid value"),
    (jobset("l1-and-l2", {"schedulingPolicy": G(1), "replicatedJobs": [{"targetReplicatedJobs": ["a", "b"]}]}), f"{S}: Forbidden"),
    (jobset("l2-over", {"replicatedJobs": [{"targetReplicatedJobs": ["a"], "schedulingPolicy": G(7)},
                                           {"targetReplicatedJobs": ["b"]}]}),
     f"{S}.replicatedJobs[0].schedulingPolicy.gang.minCount: Invalid value: 7"),
    (jobset("l2-unknown", {"replicatedJobs": [{"targetReplicatedJobs": ["a", "b", "c"]}]}),
     f"{S}.replicatedJobs[0].targetReplicatedJobs[2]: Invalid value: \"c\""),
    (jobset("l2-twice", {"replicatedJobs": [{"targetReplicatedJobs": ["a", "b"]}, {"targetReplicatedJobs": ["b"]}]}),
     f"{S}.replicatedJobs[1].targetReplicatedJobs[0]: Invalid value: \"b\""),
    (jobset("l2-untargeted", {"replicatedJobs": [{"targetReplicatedJobs": ["a"]}]}), "spec.replicatedJobs[1].name: Invalid value"),
    (jobset("l3-two-targets", {"replicatedJobs": [{"targetReplicatedJobs": ["a", "b"], "job": {}}]}),
     f"{S}.replicatedJobs[0].targetReplicatedJobs: Invalid value"),
    (jobset("l3-over", {"replicatedJobs": [{"targetReplicatedJobs": ["a"], "job": {"schedulingPolicy": G(4)}},
                                           {"targetReplicatedJobs": ["b"]}]}),
     f"{S}.replicatedJobs[0].job.schedulingPolicy.gang.minCount: Invalid value: 4"),
    (jobset("l3-own-blocks", {"replicatedJobs": [{"targetReplicatedJobs": ["a"], "job": {}, "disruptionMode": {"single": {}}},
                                                 {"targetReplicatedJobs": ["b"]}]}), f"{S}.replicatedJobs[0].job: Invalid value: true"),
    (jobset("owned-group", {}, [rj("a", 1, template={"spec": {**POD["spec"], "schedulingGroup": {"podGroupName": "x"}}})]),
     "spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup: Forbidden"),
    (jobset("job-over", None, [rj("a", 1, 2, scheduling={"schedulingPolicy": G(3)})]),
     "spec.replicatedJobs[0].template.spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 3"),
    (lws("lws-not-size", {"schedulingPolicy": G(3)}), f"{S}.schedulingPolicy.gang.minCount: Invalid value: 3: must be equal to"),
    (lws("lws-basic-all", {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}), f"{S}.disruptionMode: Invalid value"),
    (lws("lws-leaderready", {}, startup="LeaderReady"), f"{S}.schedulingPolicy.gang: Forbidden"),
    (lws("lws-empty-policy", {"schedulingPolicy": {}}), f"{S}.schedulingPolicy: Invalid value"),
]

JOB = ("cannot be set together with schedulingPolicy, schedulingConstraints, disruptionMode, or resourceClaims on the same "
       "replicatedJobs entry; job replaces the single shared PodGroup those fields configure with one PodGroup per Job")
IN = "must have a matching reference in {}.spec.resourceClaims"
# The operators' own rules: every line kubectl prints, exactly (type, path, value, the operator's text).
OPERATOR = [
    (jobset("js1-class", {"schedulingConstraints": ZONE}, [prj("a", "high"), prj("b", "low")]),
     ['spec.replicatedJobs[1].template.spec.template.spec.priorityClassName: Invalid value: "low": '
      'must match "high" when top-level gang scheduling is used']),
    (jobset("js2-class", {"replicatedJobs": [E("a", "b")]}, [prj("a", "high"), prj("b", "low")]),
     [f'{S}.replicatedJobs[0].targetReplicatedJobs[1]: Invalid value: "b": priorityClassName "low" must match "high" '
      'of the other ReplicatedJobs sharing this PodGroup']),
    (jobset("js3-inorder", {"schedulingPolicy": G(2)}, [prj("a"), prj("b")], order="InOrder"),
     [f"{S}.schedulingPolicy.gang.minCount: Invalid value: 2: cannot be set when DependsOn or InOrder StartupPolicy is used; "
      "use per-ReplicatedJob gang policies instead"]),
    (jobset("js3-dependson", {"schedulingPolicy": G(9)}, [prj("a"), prj("b", dependsOn=[{"name": "a", "status": "Ready"}])]),
     [f"{S}.schedulingPolicy.gang.minCount: Invalid value: 9: cannot be set when DependsOn or InOrder StartupPolicy is used; "
      "use per-ReplicatedJob gang policies instead"]),
    (jobset("js4-no-jobs", {"schedulingPolicy": G(3)}, []),
     ["spec.replicatedJobs: Invalid value: []: must contain at least one replicatedJob when scheduling is configured"]),
    (jobset("js6-job-policy", {"replicatedJobs": [E("a", job={}, schedulingPolicy=G(1))]}, [prj("a")]),
     [f"{S}.replicatedJobs[0].job: Invalid value: true: {JOB}"]),
    (jobset("js6-two-targets", {"replicatedJobs": [E("a", "b", job={}, resourceClaims=[CLAIM])]}, [prj("a"), prj("b")]),
     [f'{S}.replicatedJobs[0].targetReplicatedJobs: Invalid value: ["a","b"]: must target exactly one replicatedJob when job is set',
      f"{S}.replicatedJobs[0].job: Invalid value: true: {JOB}"]),
    (lws("lws1-group", {}, leader=pod(schedulingGroup={"podGroupName": "g1"}), worker=pod(schedulingGroup={"podGroupName": "g2"})),
     [f"{S}: Forbidden: managed pod templates must not set spec.schedulingGroup"]),
    (lws("lws2-class", {}, leader=pod("high"), worker=pod("low")),
     [f"{S}: Invalid value: null: leader and worker templates must use the same priorityClassName"]),
    (lws("lws3-no-leader", {"resourceClaims": [CLAIM]}),
     [f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + IN.format("leaderTemplate"),
      f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + IN.format("workerTemplate")]),
    (lws("lws3-leader-lacks", {"resourceClaims": [CLAIM]}, leader=pod(), worker=pod(resourceClaims=[CLAIM])),
     [f'{S}.resourceClaims[0]: Invalid value: "gpu": ' + IN.format("leaderTemplate")]),
    (lws("lws4-gang", {"schedulingPolicy": G(4), "schedulingConstraints": ZONE}, annotations=EX),
     [f"{S}: Forbidden: gang scheduling cannot be combined with exclusive topology in alpha",
      f"{S}.schedulingConstraints: Forbidden: workload topology constraints cannot be combined with exclusive topology in alpha"]),
    (lws("lws5-parent", {}, annotations={PC: "cpg"}, owners=OWN),
     [f"metadata.annotations[{PC}]: Forbidden: requires the group-template-name delegation annotation"]),
    (lws("lws5-no-owner", {}, annotations={GT: "tpl"}),
     [f"metadata.annotations[{GT}]: Forbidden: delegated scheduling requires a controller owner"]),
    (lws("lws5-empty", {}, annotations={GT: "", PC: ""}, owners=OWN),
     [f"metadata.annotations[{GT}]: Required value: must name a parent Workload template",
      f"metadata.annotations[{PC}]: Required value: must name a parent CompositePodGroup"]),
]
INVALID += [(obj, lines[0]) for obj, lines in OPERATOR]


@pytest.mark.parametrize("obj,message", INVALID, ids=[o["metadata"]["name"] for o, _ in INVALID])
def test_each_rule_refuses_at_the_crd_field_path(served, kubectl, obj, message):
    assert message in refused(kubectl, obj, "--dry-run=server")
    assert message in refused(kubectl, obj)
    assert not kubectl.exists(obj["kind"].lower(), obj["metadata"]["name"], NS)


def causes(stderr: str) -> list[str]:
    """The field errors kubectl prints for a 422 (one line, or a `* ` line each)."""
    text = stderr.split(" is invalid: ", 1)[-1].strip()
    lines = [ln[2:] for ln in text.splitlines() if ln.startswith("* ")]
    return lines or [text.splitlines()[0]]


@pytest.mark.parametrize("obj,lines", OPERATOR, ids=[o["metadata"]["name"] for o, _ in OPERATOR])
def test_operator_rules_answer_with_the_operators_type_path_and_text(served, kubectl, obj, lines):
    """JS-1…6, LWS-1…5: exactly the operator's lines, nothing else (JS-3 without a bound error,
    JS-4 alone, LWS-1 once for two templates)."""
    assert sorted(causes(refused(kubectl, obj, "--dry-run=server"))) == sorted(lines)


def _replace(kubectl, kind, name, change) -> tuple[int, str]:
    stored = kubectl.get(kind, name, NS)
    change(stored)
    proc = kubectl("replace", "-f", "-", stdin=yaml.safe_dump(stored), check=False)
    return proc.returncode, proc.stderr


def test_jobset_scheduling_is_immutable_after_create(served, kubectl):
    kubectl.create(jobset("frozen", {"schedulingPolicy": G(4)}))
    code, err = _replace(kubectl, "jobset", "frozen", lambda o: o["spec"]["scheduling"]["schedulingPolicy"]["gang"].update(minCount=2))
    assert code != 0 and f"{S}: Invalid value" in err and "field is immutable" in err
    code, err = _replace(kubectl, "jobset", "frozen", lambda o: o["spec"].pop("scheduling"))
    assert code != 0 and f"{S}: Invalid value" in err
    code, _ = _replace(kubectl, "jobset", "frozen", lambda o: o["metadata"].setdefault("labels", {}).update(team="ml"))
    assert code == 0


def test_lws_updates_follow_lws_and_its_cel_rule_alone_answers_basic_to_gang(served, kubectl):
    kubectl.create(lws("upd", {"schedulingPolicy": {"basic": {}}}))
    # basic -> gang: the CRD's own CEL rule answers before any webhook; exactly one error.
    code, err = _replace(kubectl, "leaderworkerset", "upd",
                         lambda o: o["spec"]["scheduling"].update(schedulingPolicy=G(4)))
    assert code != 0 and err.count(f"{S}.schedulingPolicy") == 1 and "field basic is immutable once set" in err
    # LWS-6: removing scheduling is refused by the webhook at spec.scheduling, as LWS says it.
    code, err = _replace(kubectl, "leaderworkerset", "upd", lambda o: o["spec"].pop("scheduling"))
    assert code != 0 and causes(err) == [f"{S}: Forbidden: cannot remove scheduling after creation"], err
    kubectl.create(lws("upd-gang", {"schedulingPolicy": G(4)}))
    # The size alone changing breaks minCount = size.
    code, err = _replace(kubectl, "leaderworkerset", "upd-gang", lambda o: o["spec"]["leaderWorkerTemplate"].update(size=8))
    assert code != 0 and f"{S}.schedulingPolicy.gang.minCount" in err
    # Both together, and gang -> basic (LWS's code allows it; its controller reports drift).
    code, err = _replace(kubectl, "leaderworkerset", "upd-gang", lambda o: (
        o["spec"]["leaderWorkerTemplate"].update(size=8), o["spec"]["scheduling"]["schedulingPolicy"]["gang"].update(minCount=8)))
    assert code == 0, err
    code, err = _replace(kubectl, "leaderworkerset", "upd-gang", lambda o: o["spec"]["scheduling"].update(schedulingPolicy={"basic": {}}))
    assert code == 0, err


def test_lws_scheduling_cannot_be_added_and_the_addition_is_judged_as_a_create(served, kubectl):
    """LWS-6: adding spec.scheduling is Forbidden, beside every create rule of the new scheduling."""
    kubectl.create(lws("upd-add"))
    code, err = _replace(kubectl, "leaderworkerset", "upd-add", lambda o: o["spec"].update(scheduling={"schedulingPolicy": G(3)}))
    assert code != 0 and sorted(causes(err)) == [
        f"{S}.schedulingPolicy.gang.minCount: Invalid value: 3: must be equal to spec.leaderWorkerTemplate.size (4) (POL-3)",
        f"{S}: Forbidden: cannot add scheduling after creation"], err


def test_jobset_scheduling_changes_only_while_suspended_with_the_condition(served, kubectl):
    """JS-5: spec.scheduling may change only while spec.suspend is true in the stored and the new
    object and the stored status has the Suspended condition True (set through the status subresource)."""
    immutable = [f'{S}: Invalid value: "": field is immutable']
    kubectl.create(jobset("susp", {"schedulingPolicy": G(1)}, [prj("a")], suspend=True))
    bump = lambda n: lambda o: o["spec"]["scheduling"]["schedulingPolicy"]["gang"].update(minCount=n)   # noqa: E731
    code, err = _replace(kubectl, "jobset", "susp", bump(2))
    assert code != 0 and causes(err) == immutable, err          # suspended, but no condition yet
    condition = {"type": "Suspended", "status": "True", "reason": "JobSetSuspended", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
    kubectl("patch", "jobset", "susp", "-n", NS, "--subresource=status", "--type=merge",
            "-p", yaml.safe_dump({"status": {"conditions": [condition]}}))
    code, err = _replace(kubectl, "jobset", "susp", bump(2))
    assert code == 0, err
    code, err = _replace(kubectl, "jobset", "susp", lambda o: (bump(1)(o), o["spec"].update(suspend=False)))
    assert code != 0 and causes(err) == immutable, err          # resuming in the same update
    # Deliberately stricter (JS-5): while suspended the changed level is judged as on create.
    code, err = _replace(kubectl, "jobset", "susp", bump(5))
    assert code != 0 and f"{S}.schedulingPolicy.gang.minCount: Invalid value: 5" in err, err
    kubectl("delete", "jobset", "susp", "-n", NS)


def test_pods_of_these_controllers_get_their_podgroup_claims(served, webhook, kubectl, namespace):
    """The JobSet / LWS controllers set spec.schedulingGroup themselves and no
    pod-group label: the session's Pod mutation still injects the group's claims."""
    gpu = {"name": "gpus", "resourceClaimTemplateName": "gpu"}
    pg = podgroup("js-a-0", resourceClaims=[gpu])
    pg["metadata"]["namespace"] = namespace
    kubectl.apply(pg)
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "js-a-0-0", "namespace": namespace,
                        "labels": {"jobset.sigs.k8s.io/jobset-name": "js"},
                        "annotations": {"scheduling.k8s.io/group-template-name": "a"}},
           "spec": {**copy.deepcopy(POD["spec"]), "schedulingGroup": {"podGroupName": "js-a-0"}}}
    deadline = time.monotonic() + 20
    while True:     # the watch delivers the PodGroup asynchronously
        out = yaml.safe_load(kubectl.create(pod, "--dry-run=server", "-o", "yaml").stdout)
        if out["spec"].get("resourceClaims") or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    kubectl.create(pod)
    stored = kubectl.get("pod", "js-a-0-0", namespace)
    assert stored["spec"]["schedulingGroup"] == {"podGroupName": "js-a-0"}
    assert stored["spec"]["resourceClaims"] == [gpu]
    assert stored["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpus"}]
    assert stored["metadata"]["labels"]["scheduling.k8s.io/pod-group"] == "js-a-0"


def test_offline_validate_with_profiles_gives_the_same_answers(tmp_path):
    """`workload-webhook validate --profile jobset --profile leaderworkerset`, no
    cluster and no config file: every object above gets the answer kubectl got."""
    import json
    import subprocess
    import sys

    from tests.server.harness import REPO
    objs = VALID + [o for o, _ in INVALID]
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    proc = subprocess.run([sys.executable, "-m", "webhook", "validate", "--profile", "jobset", "--profile", "leaderworkerset",
                           "-f", str(path), "-o", "json"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 1, proc.stderr
    answers = {a["name"]: a for a in json.loads(proc.stdout)}
    for obj in VALID:
        assert answers[obj["metadata"]["name"]]["allowed"], answers[obj["metadata"]["name"]]
    for obj, message in INVALID:
        a = answers[obj["metadata"]["name"]]
        rendered = [f"{e['field']}: {e['detail']}" for e in a["errors"]]
        field = message.split(":")[0]
        assert not a["allowed"] and any(r.startswith(field + ":") for r in rendered), (message, rendered)
