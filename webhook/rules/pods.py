"""The Pod rules (POD-1, POD-3): the group a Pod names, by label or by
`spec.schedulingGroup`, and that the two agree; the shape of what is read.
The mutation (webhook.mutation.pods) joins the Pod to that group."""
from __future__ import annotations

from typing import Any

from webhook import formats
from webhook.foreign import pods as bridge_pods
from webhook.config import Config
from webhook.field import FieldError, Path, by_rule, invalid
from webhook.schemas import structural_errors

GROUP_NAME = Path("spec", "schedulingGroup", "podGroupName")


def membership(pod: dict, cfg: Config) -> tuple[str | None, list[FieldError]]:
    """The group a Pod names, by label or by `spec.schedulingGroup` (POD-1, POD-3).
    Assumes the Pod passed the shape check."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    label = labels.get(cfg.groupLabel)
    group = (pod.get("spec") or {}).get("schedulingGroup")
    field_name = group.get("podGroupName") if group is not None else None
    label_path = Path("metadata", "labels").key(cfg.groupLabel)
    errors: list[FieldError] = []
    if group is not None and not field_name:
        errors.append(FieldError("Required", GROUP_NAME))
    elif field_name and (problem := formats.dns_subdomain(field_name)):
        errors.append(invalid(GROUP_NAME, field_name, problem))
    if label is not None and (problem := formats.dns_subdomain(label)):
        errors += by_rule([invalid(label_path, label, f"must name a PodGroup: {problem}")], "POD-1")
    if field_name and label is not None and field_name != label:
        errors += by_rule([invalid(GROUP_NAME, field_name, f"must equal the {cfg.groupLabel} label ({label!r}); "
                                                           "the Pod would join two groups")], "POD-3")
    name = field_name or label or None
    if cfg.bridge.dialects:         # a Coscheduling label or a Volcano annotation names the group too (BRG-3)
        named_by = str(GROUP_NAME) if field_name else str(label_path)
        name, more = bridge_pods.membership(pod, cfg.bridge, name, named_by)
        errors += more
    return name, errors


def shape_errors(pod: Any, cfg: Config) -> list[FieldError]:
    """The Pod schema's check of what membership and claim injection read.
    Containers are read only with claimsToContainers: all; otherwise they are
    left out of the check (a Pod with 50 containers cost 100 µs for nothing)."""
    if cfg.claimsToContainers == "all" or not isinstance(pod, dict) or not isinstance(pod.get("spec"), dict):
        return structural_errors("pod", pod)
    spec = pod["spec"]
    view = {**pod, "spec": {k: spec[k] for k in ("schedulingGroup", "resourceClaims") if k in spec}}
    return structural_errors("pod", view)


def check_pod(pod: Any, cfg: Config) -> list[FieldError]:
    """Membership consistency, for the validating webhook."""
    shape = shape_errors(pod, cfg)
    return shape or membership(pod, cfg)[1]
