"""Priority fields of templates, PodGroups and CompositePodGroups:
`priorityClassName`, `priority`, `preemptionPolicy` (all immutable)."""
from __future__ import annotations

from typing import Any

from webhook import formats
from webhook.blocks.common import check_immutable
from webhook.field import FieldError, Path, invalid, not_supported

FIELDS = ("priorityClassName", "priority", "preemptionPolicy")
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")


def validate(spec: dict, path: Path) -> list[FieldError]:
    """Formats and bounds; the PodGroupPreemptionPolicy gate is the caller's (WL-2)."""
    errors: list[FieldError] = []
    name = spec.get("priorityClassName")
    if name and (problem := formats.dns_subdomain(name)):
        errors.append(invalid(path.child("priorityClassName"), name, problem))
    prio = spec.get("priority")
    if prio is not None and prio > HIGHEST_USER_DEFINABLE_PRIORITY:
        errors.append(invalid(path.child("priority"), prio,
                              f"must be less than or equal to {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = spec.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        errors.append(not_supported(path.child("preemptionPolicy"), policy, PREEMPTION_POLICIES))
    return errors


def validate_update(new: dict, old: dict, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    for f in FIELDS:
        errors += check_immutable(new.get(f), old.get(f), path.child(f))
    return errors


def configuration(spec: dict) -> tuple[Any, Any]:
    return spec.get("priorityClassName"), spec.get("priority")
