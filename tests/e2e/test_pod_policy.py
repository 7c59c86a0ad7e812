"""POD-3 on the final Pod as a ValidatingAdmissionPolicy in the real
kube-apiserver (webhook.vap.pod_membership): the CEL agrees with the webhook's rule.
A second copy of the policy, for another group label and bound to nothing but
that label, shows the policy alone deciding (the mutating webhook never looks
at that label)."""
import dataclasses
import json
import time

import yaml

from tests.unit.helpers import pod
from webhook import config as config_mod
from webhook.vap.pod_membership import policy_objects
from webhook.registration import pod_match_condition

LABEL = "example.com/group"


def _pod(namespace, name, labels=None, group=None):
    p = pod(labels, **({"schedulingGroup": {"podGroupName": group}} if group else {}))
    p["metadata"].update(name=name, namespace=namespace)
    return p


def test_POD_3_membership_policy_in_kube_apiserver(webhook, kubectl, namespace):
    cfg = dataclasses.replace(config_mod.Config(), groupLabel=LABEL)
    docs = policy_objects(cfg, f"e2e-{namespace}", ["kube-system"], pod_match_condition(cfg))
    docs[0]["spec"]["matchConstraints"]["namespaceSelector"] = {
        "matchLabels": {"kubernetes.io/metadata.name": namespace}}
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    try:
        two_groups = _pod(namespace, "two", {LABEL: "a"}, group="b")
        deadline = time.monotonic() + 30          # the API server picks policies up asynchronously
        while time.monotonic() < deadline:
            proc = kubectl.create(two_groups, "--dry-run=server", check=False)
            if proc.returncode != 0:
                break
            time.sleep(0.3)
        assert proc.returncode != 0, "the policy never took effect"
        assert ('spec.schedulingGroup.podGroupName: Invalid value: "b": must equal the example.com/group label '
                '("a"); the Pod would join two groups (POD-3)') in proc.stderr
        assert "ValidatingAdmissionPolicy" in proc.stderr

        bad_label = kubectl.create(_pod(namespace, "bad", {LABEL: "Not_A_Name"}), "--dry-run=server", check=False)
        assert bad_label.returncode != 0
        assert 'metadata.labels[example.com/group]: Invalid value: "Not_A_Name": must name a PodGroup' in bad_label.stderr

        same = kubectl.create(_pod(namespace, "same", {LABEL: "a"}, group="a"), "-o", "json")
        assert json.loads(same.stdout)["spec"]["schedulingGroup"] == {"podGroupName": "a"}
        label_only = kubectl.create(_pod(namespace, "label-only", {LABEL: "a"}), "-o", "json")
        assert json.loads(label_only.stdout)["metadata"]["labels"][LABEL] == "a"
    finally:
        kubectl("delete", "-f", "-", "--ignore-not-found", stdin=yaml.safe_dump_all(docs))


def test_default_registration_checks_pods_by_policy_not_by_webhook(webhook, kubectl):
    vwc = json.loads(kubectl("get", "validatingwebhookconfiguration", "workload-webhook", "-o", "json").stdout)
    assert not any(h["name"].startswith("pods.") for h in vwc["webhooks"])
    vap = json.loads(kubectl("get", "validatingadmissionpolicy", "workload-webhook-pod-membership", "-o",
                             "json").stdout)
    assert len(vap["spec"]["validations"]) == 4
    # The API server type-checked every expression without a warning.
    assert not (vap.get("status") or {}).get("typeChecking", {}).get("expressionWarnings")
