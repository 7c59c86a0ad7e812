"""What registration hands the API server for a config: the Pod check of the
final object as an in-process policy by default, as a webhook on request."""
import dataclasses

from webhook import config as config_mod
from webhook.registration import Endpoint, configurations

ENDPOINT = Endpoint(b"ca", url="https://127.0.0.1:9443")


def _by_kind(docs):
    return {d["kind"]: d for d in docs}


def test_POD_3_default_checks_pods_by_policy():
    docs = _by_kind(configurations(config_mod.Config(), ENDPOINT))
    assert [h["name"] for h in docs["ValidatingWebhookConfiguration"]["webhooks"]] == [
        "scheduling.validate.workload-webhook.k8s.io"]
    assert [h["name"] for h in docs["MutatingWebhookConfiguration"]["webhooks"]] == [
        "pods.mutate.workload-webhook.k8s.io"]
    policy = docs["ValidatingAdmissionPolicy"]["spec"]
    assert policy["failurePolicy"] == "Fail" and len(policy["validations"]) == 4
    assert policy["matchConditions"] == docs["MutatingWebhookConfiguration"]["webhooks"][0]["matchConditions"]
    assert docs["ValidatingAdmissionPolicyBinding"]["spec"] == {
        "policyName": "workload-webhook-pod-membership", "validationActions": ["Deny"]}


def test_POD_3_pods_validation_webhook_restores_the_validating_call():
    cfg = config_mod.from_dict({"pods": {"validation": "webhook"}})
    docs = configurations(cfg, ENDPOINT)
    assert {d["kind"] for d in docs} == {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
    names = [h["name"] for h in _by_kind(docs)["ValidatingWebhookConfiguration"]["webhooks"]]
    assert "pods.validate.workload-webhook.k8s.io" in names


def test_policy_follows_the_group_label():
    cfg = dataclasses.replace(config_mod.Config(), groupLabel="example.com/group")
    policy = _by_kind(configurations(cfg, ENDPOINT))["ValidatingAdmissionPolicy"]["spec"]
    assert all("'example.com/group'" in v["expression"] or "schedulingGroup" in v["expression"]
               for v in policy["validations"])
    assert "'example.com/group' in object.metadata.labels" in policy["matchConditions"][0]["expression"]


def test_unknown_pod_validation_mode_is_a_config_error():
    try:
        config_mod.from_dict({"pods": {"validation": "both"}})
    except config_mod.ConfigError as exc:
        assert "pods.validation" in str(exc)
    else:
        raise AssertionError("accepted pods.validation: both")


# ---------------------------------------------------------------- fail closed only where it protects something

import pytest                                                    # noqa: E402

from tests.unit.helpers import TRAINJOB_TARGET                   # noqa: E402
from webhook.targets import UnknownResource                      # noqa: E402


def _hooks(docs):
    return {h["name"].split(".")[0] + "." + h["name"].split(".")[1]: h
            for d in docs if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]}


def test_no_status_subresource_is_sent_to_the_webhook():
    """kube-apiserver validates what kube-scheduler and the ResourceClaim controller write
    to a PodGroup's status; with podgroups/status registered (failurePolicy Fail) those
    writes were refused while the webhook was down."""
    cfg = config_mod.from_dict({"targets": [TRAINJOB_TARGET], "pods": {"validation": "webhook"}})
    hooks = _hooks(configurations(cfg, ENDPOINT))
    resources = [r for h in hooks.values() for rule in h["rules"] for r in rule["resources"]]
    assert not [r for r in resources if "/" in r], resources
    assert hooks["scheduling.validate"]["rules"][0]["resources"] == ["workloads", "podgroups", "compositepodgroups"]


def test_failure_policy_is_the_object_validations_and_the_pods_keep_their_own():
    cfg = config_mod.from_dict({"targets": [TRAINJOB_TARGET], "pods": {"validation": "webhook"}})
    hooks = _hooks(configurations(cfg, ENDPOINT, failure_policy="Ignore"))
    assert {n: h["failurePolicy"] for n, h in hooks.items()} == {
        "scheduling.validate": "Ignore", "targets.validate": "Ignore",
        "pods.validate": "Fail", "targets.mutate": "Fail", "pods.mutate": "Fail"}
    assert {h["failurePolicy"] for h in _hooks(configurations(cfg, ENDPOINT)).values()} == {"Fail"}


def test_a_target_mutate_never_refuses_cannot_be_sent_to_it():
    """The shipped profiles default nothing: a down webhook must not refuse JobSets at /mutate."""
    cfg = config_mod.from_dict({"targets": [TRAINJOB_TARGET], "profiles": ["jobset", "leaderworkerset"]})
    hooks = _hooks(configurations(cfg, ENDPOINT))
    assert [r["resources"] for r in hooks["targets.mutate"]["rules"]] == [["trainjobs"]]
    assert [r["resources"] for r in hooks["targets.validate"]["rules"]] == [["trainjobs"], ["jobsets"],
                                                                            ["leaderworkersets"]]
    only_profiles = _hooks(configurations(config_mod.from_dict({"profiles": ["jobset"]}), ENDPOINT))
    assert "targets.mutate" not in only_profiles


def test_a_target_without_a_known_resource_is_never_registered():
    cfg = config_mod.from_dict({"targets": [{**TRAINJOB_TARGET, "kind": "TrainingPolicy"}]})
    with pytest.raises(UnknownResource):
        configurations(cfg, ENDPOINT)
    with pytest.raises(UnknownResource):              # resources resolved for other targets only
        configurations(cfg, ENDPOINT, resources={"TrainJob.training.example.com": "trainjobs"})
    hooks = _hooks(configurations(cfg, ENDPOINT, resources={"TrainingPolicy.training.example.com": "trainingpolicies"}))
    assert hooks["targets.validate"]["rules"][0]["resources"] == ["trainingpolicies"]
