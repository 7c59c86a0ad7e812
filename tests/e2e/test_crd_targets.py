"""A TrainJob CRD guarded by the webhook, through the real kubectl and API server."""
import copy
import json

from tests.unit.helpers import trainjob

LABEL = "scheduling.k8s.io/pod-group"


def tj(namespace, name="job", scheduling=None, replicas=4):
    obj = trainjob(scheduling, replicas=replicas)
    obj["metadata"] = {"name": name, "namespace": namespace}
    return obj


def test_valid_trainjobs_are_stored(webhook, kubectl, namespace):
    kubectl.apply([tj(namespace, "gang", {"schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"all": {}},
                                          "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
                                          "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpus"}]}),
                   tj(namespace, "basic", {"schedulingPolicy": {"basic": {}}})])
    assert kubectl.get("trainjob", "gang", namespace)["spec"]["scheduling"]["disruptionMode"] == {"all": {}}
    assert kubectl.exists("trainjob", "basic", namespace)


def test_DIS_2_all_with_basic_is_rejected_with_the_field_path(webhook, kubectl, namespace):
    proc = kubectl.apply(tj(namespace, "bad", {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}),
                         check=False)
    assert proc.returncode != 0
    assert 'The TrainJob "bad" is invalid: ' in proc.stderr
    assert "spec.scheduling.disruptionMode: Invalid value" in proc.stderr
    assert "requires a gang scheduling policy (DIS-2)" in proc.stderr      # this service's own rule, by id
    assert not kubectl.exists("trainjob", "bad", namespace)


def test_POL_4_min_count_changes_within_replicas_variant_frozen(webhook, kubectl, namespace):
    obj = tj(namespace, "train", {"schedulingPolicy": {"gang": {"minCount": 2}}}, replicas=8)
    kubectl.apply(obj)
    raised = copy.deepcopy(obj)
    raised["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] = 8
    kubectl.apply(raised)
    assert kubectl.get("trainjob", "train", namespace)["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] == 8
    too_big = copy.deepcopy(obj)
    too_big["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] = 9
    proc = kubectl.apply(too_big, check=False)
    assert proc.returncode != 0 and "must be less than or equal to spec.replicas (8)" in proc.stderr
    switched = copy.deepcopy(obj)
    switched["spec"]["scheduling"]["schedulingPolicy"] = {"basic": {}}
    proc = kubectl("replace", "-f", "-", stdin=__import__("yaml").safe_dump(
        {**switched, "metadata": kubectl.get("trainjob", "train", namespace)["metadata"]}), check=False)
    assert proc.returncode != 0 and "spec.scheduling.schedulingPolicy: Invalid value: null: the basic/gang policy variant is immutable" in proc.stderr
    assert "immutable" in proc.stderr
    assert kubectl.get("trainjob", "train", namespace)["spec"]["scheduling"]["schedulingPolicy"] == {"gang": {"minCount": 8}}


def test_DEF_1_missing_min_count_is_defaulted(webhook, kubectl, namespace):
    kubectl.apply(tj(namespace, "defaulted", {"schedulingPolicy": {"gang": {}}}, replicas=6))
    stored = kubectl("get", "trainjob", "defaulted", "-n", namespace, "-o", "yaml").stdout
    assert "minCount: 6" in stored


def test_ADM_4_dry_run_server_same_verdict_stores_nothing(webhook, kubectl, namespace):
    bad = tj(namespace, "dry-bad", {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})
    proc = kubectl.apply(bad, "--dry-run=server", check=False)
    assert proc.returncode != 0 and "spec.scheduling.disruptionMode" in proc.stderr
    good = tj(namespace, "dry-good", {"schedulingPolicy": {"gang": {}}}, replicas=3)
    out = kubectl.apply(good, "--dry-run=server", "-o", "yaml").stdout
    assert "minCount: 3" in out      # the mutation is visible in the dry-run answer
    assert not kubectl.exists("trainjob", "dry-good", namespace)
    assert not kubectl.exists("trainjob", "dry-bad", namespace)


def test_ADM_6_update_of_an_object_near_etcds_size_limit_is_admitted(webhook, kubectl, namespace):
    """An UPDATE carries the object twice (object and oldObject): 2 x 1.43 MiB
    plus the envelope is over the former 3 MiB body limit, under the 7 MiB one."""
    big = tj(namespace, "big", {"schedulingPolicy": {"gang": {"minCount": 2}}}, replicas=2)
    big["spec"]["image"] = "registry.example/" + "x" * 1_500_000
    kubectl("create", "-f", "-", stdin=json.dumps(big), timeout=120)
    offset = webhook.log_size()
    kubectl("label", "trainjob", "big", "-n", namespace, "touched=yes", timeout=120)
    kubectl("annotate", "trainjob", "big", "-n", namespace, "note=updated", timeout=120)
    stored = json.loads(kubectl("get", "trainjob", "big", "-n", namespace, "-o", "json", timeout=120).stdout)
    assert stored["metadata"]["labels"]["touched"] == "yes" and stored["metadata"]["annotations"]["note"] == "updated"
    assert len(json.dumps(stored)) > 1_500_000
    assert "body over" not in webhook.log_since(offset)
    # It was judged: the same update with a bad change is still refused.
    proc = kubectl("patch", "trainjob", "big", "-n", namespace, "--type", "merge", "-p",
                   json.dumps({"spec": {"scheduling": {"disruptionMode": {"all": {}},
                                                       "schedulingPolicy": {"basic": {}}}}}), check=False,
                   timeout=120)
    assert proc.returncode != 0 and "failed calling webhook" not in proc.stderr, proc.stderr
