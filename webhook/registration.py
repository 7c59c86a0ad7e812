"""The ValidatingWebhookConfiguration and MutatingWebhookConfiguration that
route exactly this service's objects to it: scheduling.k8s.io objects, every
configured target CRD, and only the Pods that name a pod group (matchConditions),
never in kube-system or the webhook's own namespace; plus, with
`pods.validation: policy` (the default), the in-process policy that checks the
final Pod (webhook.vap.pod_membership) instead of a validating webhook call."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from webhook import kinds
from webhook.config import Config
from webhook.vap.pod_membership import policy_objects
from webhook.vap.targets import export

SUFFIX = "workload-webhook.k8s.io"


@dataclass(frozen=True)
class Endpoint:
    """Where the API server sends reviews: a URL (outside the cluster, tests) or a Service."""
    ca_bundle: bytes
    url: str | None = None
    service_namespace: str | None = None
    service_name: str | None = None
    service_port: int = 443

    def client_config(self, path: str) -> dict:
        cfg: dict = {"caBundle": base64.b64encode(self.ca_bundle).decode()}
        if self.url:
            cfg["url"] = self.url.rstrip("/") + path
        else:
            cfg["service"] = {"namespace": self.service_namespace, "name": self.service_name,
                              "path": path, "port": self.service_port}
        return cfg


def pod_match_condition(cfg: Config) -> dict:
    label = cfg.groupLabel.replace("\\", "\\\\").replace("'", "\\'")
    return {"name": "names-a-pod-group",
            "expression": f"(has(object.metadata.labels) && '{label}' in object.metadata.labels) || "
                          "has(object.spec.schedulingGroup)"}


def _common(name: str, endpoint: Endpoint, path: str, rules: list, failure: str, exclude: list[str],
            timeout: int) -> dict:
    return {"name": name, "clientConfig": endpoint.client_config(path), "rules": rules,
            "failurePolicy": failure, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "timeoutSeconds": timeout, "matchPolicy": "Equivalent",
            "namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(exclude)}]}}


def target_rules(cfg: Config, operations: list[str], skip: frozenset[str] = frozenset()) -> list[dict]:
    """`skip`: targets (Kind.group) the exported policies judge entirely (vap replace)."""
    return [{"apiGroups": [t.group], "apiVersions": list(t.versions) or ["*"], "resources": [t.resource],
             "operations": operations, "scope": "*"} for t in cfg.targets if f"{t.kind}.{t.group}" not in skip]


def configurations(cfg: Config, endpoint: Endpoint, name: str = "workload-webhook", namespace: str = "workload-webhook",
                   pod_failure_policy: str = "Fail", timeout: int = 5) -> list[dict]:
    exclude = sorted({"kube-system", namespace})
    pods = [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"], "scope": "Namespaced"}]
    scheduling = [{"apiGroups": [kinds.SCHEDULING], "apiVersions": list(kinds.SCHEDULING_VERSIONS),
                   "resources": kinds.scheduling_resources(), "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}]
    validating = [_common(f"scheduling.validate.{SUFFIX}", endpoint, "/validate", scheduling, "Fail", exclude, timeout)]
    mutating = []
    exported = export(cfg, name, tuple(exclude)) if cfg.vap.enabled else None
    # replace: a target the policies judge entirely is no longer sent to /validate (still to /mutate).
    replaced = frozenset(exported.expressible) if exported and cfg.vap.mode == "replace" else frozenset()
    if cfg.targets and target_rules(cfg, ["CREATE", "UPDATE"], replaced):
        validating.append(_common(f"targets.validate.{SUFFIX}", endpoint, "/validate",
                                  target_rules(cfg, ["CREATE", "UPDATE"], replaced), "Fail", exclude, timeout))
    if cfg.targets:
        mutating.append({**_common(f"targets.mutate.{SUFFIX}", endpoint, "/mutate", target_rules(cfg, ["CREATE"]),
                                   "Fail", exclude, timeout), "reinvocationPolicy": "IfNeeded"})
    pod_hook = {"matchConditions": [pod_match_condition(cfg)]}
    if cfg.podValidation == "webhook":
        validating.append({**_common(f"pods.validate.{SUFFIX}", endpoint, "/validate", pods, pod_failure_policy,
                                     exclude, timeout), **pod_hook})
    mutating.append({**_common(f"pods.mutate.{SUFFIX}", endpoint, "/mutate", pods, pod_failure_policy, exclude,
                               timeout), **pod_hook, "reinvocationPolicy": "IfNeeded"})
    def meta() -> dict:
        return {"name": name, "labels": {"app.kubernetes.io/name": "workload-webhook"}}
    policy = policy_objects(cfg, name, exclude, pod_match_condition(cfg)) if cfg.podValidation == "policy" else []
    policy += exported.objects if exported else []
    return json.loads(json.dumps([  # no shared sub-objects, so YAML output has no anchors
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": meta(),
         "webhooks": validating},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": meta(),
         "webhooks": mutating},
        *policy,
    ]))
