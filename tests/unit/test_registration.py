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
