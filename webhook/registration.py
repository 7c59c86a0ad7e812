"""The ValidatingWebhookConfiguration and MutatingWebhookConfiguration that
route exactly this service's objects to it: scheduling.k8s.io objects, every
configured target CRD, and only the Pods that name a pod group (matchConditions),
never in kube-system or the webhook's own namespace; with `gangByDefault` on, the Job
creates (and named targets) of the selected namespaces that DEF-2 can change; plus, with
`pods.validation: policy` (the default), the in-process policy that checks the
final Pod (webhook.vap.pod_membership) instead of a validating webhook call.

Only what a rule needs is sent, so a down webhook refuses only what it protects:
object writes (failure policy `failure_policy`, default Fail), never a status
subresource (webhook.kinds). A target's rule names the resource that serves its
kind (`resources`: by discovery or a CRD, webhook.cluster.discovery); without
them, the config must tell it (webhook.targets.offline_resources), never a guess."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Mapping

from webhook import kinds
from webhook.foreign.admission import foreign_rules, pod_match_terms
from webhook.config import Config
from webhook.targets import UnknownResource, offline_resources
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
    terms = [f"(has(object.metadata.labels) && '{label}' in object.metadata.labels)", "has(object.spec.schedulingGroup)",
             *pod_match_terms(cfg.bridge)]
    return {"name": "names-a-pod-group", "expression": " || ".join(terms)}


def _common(name: str, endpoint: Endpoint, path: str, rules: list, failure: str, exclude: list[str],
            timeout: int) -> dict:
    return {"name": name, "clientConfig": endpoint.client_config(path), "rules": rules,
            "failurePolicy": failure, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "timeoutSeconds": timeout, "matchPolicy": "Equivalent",
            "namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(exclude)}]}}


def target_resources(cfg: Config, resources: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """Kind.group -> resource of every target: `resources` (discovery, CRDs), else the config's.
    Raises UnknownResource naming each target without one."""
    if resources is None:
        return offline_resources(cfg.targets)
    missing = [f"{t.key}: no resource resolved for it" for t in cfg.targets if t.key not in resources]
    if missing:
        raise UnknownResource(missing)
    return resources


def target_rules(cfg: Config, operations: list[str], skip: frozenset[str] = frozenset(),
                 resources: Mapping[str, str] | None = None) -> list[dict]:
    """`skip`: targets (Kind.group) the exported policies judge entirely (vap replace)."""
    names = target_resources(cfg, resources)
    return [{"apiGroups": [t.group], "apiVersions": list(t.versions) or ["*"], "resources": [names[t.key]],
             "operations": operations, "scope": "*"} for t in cfg.targets if t.key not in skip]


#: The Jobs DEF-2 can change (webhook.mutation.gang_default.job_gang_size), so no other Job is sent.
JOB_GANG_CONDITIONS = (
    ("no-scheduling", "!has(object.spec.scheduling)"),
    ("several-pods", "has(object.spec.parallelism) && object.spec.parallelism > 1 && "
                     "(!has(object.spec.completions) || object.spec.completions > 1)"),
    ("no-controller-owner", "!has(object.metadata.ownerReferences) || "
                            "!object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)"),
    ("no-pod-group", "!has(object.spec.template.spec.schedulingGroup)"),
)


def gang_webhooks(cfg: Config, endpoint: Endpoint, exclude: list[str], timeout: int, failure: str,
                  resources: Mapping[str, str]) -> list[dict]:
    """DEF-2 (gangByDefault on): Job creates, and the named targets' creates not already sent to
    targets.mutate, of the selected namespaces only."""
    gang = cfg.gangByDefault
    if not gang.enabled:
        return []
    selector = gang.namespaceSelector.as_label_selector()

    def scoped(hook: dict) -> dict:
        ns = hook["namespaceSelector"]
        ns["matchExpressions"] += selector.get("matchExpressions", [])
        if "matchLabels" in selector:
            ns["matchLabels"] = selector["matchLabels"]
        return {**hook, "reinvocationPolicy": "IfNeeded"}
    out = []
    if gang.jobs:
        rules = [{"apiGroups": [kinds.JOB.group], "apiVersions": list(kinds.JOB.versions), "resources": [kinds.JOB.plural],
                  "operations": ["CREATE"], "scope": "Namespaced"}]
        out.append({**scoped(_common(f"jobs.gang.mutate.{SUFFIX}", endpoint, "/mutate", rules, failure, exclude,
                                     timeout)),
                    "matchConditions": [{"name": n, "expression": e} for n, e in JOB_GANG_CONDITIONS]})
    skip = frozenset(t.key for t in cfg.targets if t.mutates or not gang.for_target(t.key))
    if rules := target_rules(cfg, ["CREATE"], skip, resources):
        out.append(scoped(_common(f"targets.gang.mutate.{SUFFIX}", endpoint, "/mutate", rules, failure, exclude,
                                  timeout)))
    return out


def configurations(cfg: Config, endpoint: Endpoint, name: str = "workload-webhook", namespace: str = "workload-webhook",
                   pod_failure_policy: str = "Fail", timeout: int = 5, failure_policy: str = "Fail",
                   resources: Mapping[str, str] | None = None) -> list[dict]:
    """`failure_policy`: the validating webhooks of objects (scheduling kinds, targets);
    `pod_failure_policy`: the Pod webhooks. Raises UnknownResource (see target_resources)."""
    exclude = sorted({"kube-system", namespace})
    resources = target_resources(cfg, resources)
    pods = [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"], "scope": "Namespaced"}]
    scheduling = [{"apiGroups": [kinds.SCHEDULING], "apiVersions": list(kinds.SCHEDULING_VERSIONS),
                   "resources": kinds.scheduling_resources(), "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}]
    validating = [_common(f"scheduling.validate.{SUFFIX}", endpoint, "/validate", scheduling, failure_policy, exclude,
                          timeout)]
    mutating = []
    exported = export(cfg, name, tuple(exclude), resources) if cfg.vap.enabled else None
    # replace: a target the policies judge entirely is no longer sent to /validate (still to /mutate).
    replaced = frozenset(exported.expressible) if exported and cfg.vap.mode == "replace" else frozenset()
    validated = target_rules(cfg, ["CREATE", "UPDATE"], replaced, resources)
    if validated:
        validating.append(_common(f"targets.validate.{SUFFIX}", endpoint, "/validate", validated, failure_policy,
                                  exclude, timeout))
    if foreign := foreign_rules(cfg.bridge):     # warnings only (BRG-1): a job's controller never waits on it
        validating.append(_common(f"bridge.validate.{SUFFIX}", endpoint, "/validate", foreign,
                                  "Ignore", exclude, timeout))
    # Only targets /mutate can change (DEF-1): a profile that defaults nothing is never refused by it.
    mutated = target_rules(cfg, ["CREATE"], frozenset(t.key for t in cfg.targets if not t.mutates), resources)
    if mutated:
        mutating.append({**_common(f"targets.mutate.{SUFFIX}", endpoint, "/mutate", mutated, "Fail", exclude, timeout),
                         "reinvocationPolicy": "IfNeeded"})
    mutating += gang_webhooks(cfg, endpoint, exclude, timeout, failure_policy, resources)
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
