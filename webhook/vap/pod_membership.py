"""POD-3 (membership consistency) as a ValidatingAdmissionPolicy: the check of
the final Pod runs in kube-apiserver (CEL), not as a second webhook call.

Every Pod of a gang job used to cost two calls to this service: `/mutate`
(which already refuses inconsistent membership) and `/validate` (which judged
the final object again, in case a later mutating webhook changed it). The
second call cost kube-apiserver about as much CPU again as the first
(bench/burst_bench.py, bench/README.md). The policy keeps the guarantee on the
final object at no network cost. `pods.validation: webhook` restores the
validating webhook instead.

The messages follow the webhook's (`field: Type: value: detail`)."""
from __future__ import annotations

from webhook.config import Config

SUBDOMAIN_RE = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def _cel_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def validations(cfg: Config) -> list[dict]:
    key = _cel_string(cfg.groupLabel)
    has_label = f"has(object.metadata.labels) && {key} in object.metadata.labels"
    label = f"object.metadata.labels[{key}]"
    group = "object.spec.schedulingGroup"
    has_name = f"has({group}.podGroupName) && size({group}.podGroupName) > 0"
    name = f"{group}.podGroupName"
    subdomain = _cel_string(SUBDOMAIN_RE)
    label_path = f"metadata.labels[{cfg.groupLabel}]"
    return [
        {"expression": f"!has({group}) || ({has_name})",
         "message": "spec.schedulingGroup.podGroupName: Required value", "reason": "Invalid"},
        {"expression": f"!has({group}) || !({has_name}) || (size({name}) <= 253 && {name}.matches({subdomain}))",
         "messageExpression": f"'spec.schedulingGroup.podGroupName: Invalid value: \"' + {name} + "
                              "'\": must be a lowercase RFC 1123 subdomain'",
         "reason": "Invalid"},
        {"expression": f"!({has_label}) || (size({label}) <= 253 && {label}.matches({subdomain}))",
         "messageExpression": f"{_cel_string(label_path)} + ': Invalid value: \"' + {label} + "
                              "'\": must name a PodGroup: a lowercase RFC 1123 subdomain (POD-1)'",
         "reason": "Invalid"},
        {"expression": f"!({has_label}) || !has({group}) || !({has_name}) || {name} == {label}",
         "messageExpression": f"'spec.schedulingGroup.podGroupName: Invalid value: \"' + {name} + "
                              f"'\": must equal the {cfg.groupLabel} label (\"' + {label} + "
                              "'\"); the Pod would join two groups (POD-3)'",
         "reason": "Invalid"},
    ]


def policy_objects(cfg: Config, name: str, exclude: list[str], match_condition: dict) -> list[dict]:
    """The ValidatingAdmissionPolicy and its binding (Deny), matching what the
    Pod webhooks match: CREATE of Pods that name a pod group, outside `exclude`."""
    policy_name = f"{name}-pod-membership"
    labels = {"app.kubernetes.io/name": "workload-webhook"}
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": policy_name, "labels": labels},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"],
                                   "operations": ["CREATE"]}],
                "namespaceSelector": {"matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(exclude)}]},
            },
            "matchConditions": [match_condition],
            "validations": validations(cfg),
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name, "labels": labels},
        "spec": {"policyName": policy_name, "validationActions": [binding_action(cfg)]},
    }
    return [policy, binding]


def binding_action(cfg: Config) -> str:
    """The binding follows `enforcement` for POD-1/POD-3 (the stricter of the two) at the rule
    and default level; namespace overrides cannot be expressed in one binding (docs/rollout.md)."""
    from webhook.enforcement import RANK
    actions = [cfg.enforcement.action(rule, "Pod", lambda: None, "admission") for rule in ("POD-1", "POD-3")]
    return {"deny": "Deny", "warn": "Warn", "audit": "Audit"}[min(actions, key=RANK.__getitem__)]
