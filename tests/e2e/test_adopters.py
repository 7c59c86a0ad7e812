"""The shipped profiles on the operators' real CRDs (../shared/adopters, loaded
with `kubectl create`) in the real API server, through kubectl: valid objects
are admitted unchanged, each rule refuses at the CRD's own field path,
server-side dry-run judges the same, updates follow each operator's
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


def jobset(name, scheduling=None, jobs=None):
    spec = {"replicatedJobs": jobs or [rj("a", 2, 3), rj("b", 1)]}     # 2×3 + 1 = 7 pods
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def lws(name, scheduling=None, size=4, startup=None):
    spec = {"leaderWorkerTemplate": {"size": size, "workerTemplate": copy.deepcopy(POD)}}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    if startup:
        spec["startupPolicy"] = startup
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


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
    lws("lws-default", {"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "gpu"}]}),
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
                                                 {"targetReplicatedJobs": ["b"]}]}), f"{S}.replicatedJobs[0].job: Forbidden"),
    (jobset("owned-group", {}, [rj("a", 1, template={"spec": {**POD["spec"], "schedulingGroup": {"podGroupName": "x"}}})]),
     "spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup: Forbidden"),
    (jobset("job-over", None, [rj("a", 1, 2, scheduling={"schedulingPolicy": G(3)})]),
     "spec.replicatedJobs[0].template.spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 3"),
    (lws("lws-not-size", {"schedulingPolicy": G(3)}), f"{S}.schedulingPolicy.gang.minCount: Invalid value: 3: must be equal to"),
    (lws("lws-basic-all", {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}), f"{S}.disruptionMode: Invalid value"),
    (lws("lws-leaderready", {}, startup="LeaderReady"), f"{S}.schedulingPolicy.gang: Forbidden"),
    (lws("lws-empty-policy", {"schedulingPolicy": {}}), f"{S}.schedulingPolicy: Invalid value"),
]


@pytest.mark.parametrize("obj,message", INVALID, ids=[o["metadata"]["name"] for o, _ in INVALID])
def test_each_rule_refuses_at_the_crd_field_path(served, kubectl, obj, message):
    assert message in refused(kubectl, obj, "--dry-run=server")
    assert message in refused(kubectl, obj)
    assert not kubectl.exists(obj["kind"].lower(), obj["metadata"]["name"], NS)


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
    # Removing scheduling is refused by the webhook at spec.scheduling.
    code, err = _replace(kubectl, "leaderworkerset", "upd", lambda o: o["spec"].pop("scheduling"))
    assert code != 0 and f"{S}: Invalid value" in err and "cleared" in err
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
