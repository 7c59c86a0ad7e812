"""Composite pod group scheduling policy: `basic: {}` | `gang: {minGroupCount}` (CMP-1).

Upstream: CompositePodGroupSchedulingPolicy and WorkloadCompositePodGroupSchedulingPolicy.
"""
from __future__ import annotations

from typing import Any

from webhook.blocks.common import Mode, check_immutable, check_no_set_no_unset, min_count, union, variant
from webhook.field import FieldError, Path, by_rule, found_by, invalid
from webhook.schemas import structural_errors

SCHEMA = "blocks/composite-scheduling-policy"
MEMBERS = ("basic", "gang")
BASIC, GANG = MEMBERS


def shape(value: Any, path: Path) -> list[FieldError]:
    return structural_errors(SCHEMA, value, path)


def kind_of(value: Any) -> str | None:
    return variant(value, MEMBERS)


def get_min_group_count(value: Any) -> Any:
    return (value.get(GANG) or {}).get("minGroupCount") if isinstance(value, dict) else None


@found_by("CMP-1")
def validate(value: dict | None, path: Path, mode: Mode) -> list[FieldError]:
    if value is None:
        return [] if mode.embedded else union({}, path, MEMBERS)
    errors = union(value, path, MEMBERS)
    if value.get(GANG) is not None:
        errors += min_count(value[GANG].get("minGroupCount"), path.child(GANG, "minGroupCount"), mode)
    return errors


@found_by("CMP-1")
def validate_children(count: int, path: Path, name: Any = None) -> list[FieldError]:
    """CMP-1: a composite group must have at least one child."""
    if count >= 1:
        return []
    return [invalid(path, name if name is not None else count,
                    "must have at least one child PodGroupTemplate or CompositePodGroupTemplate")]


def validate_bound(policy: Any, policy_path: Path, children: int, children_path: Path) -> list[FieldError]:
    """POL-3 (policy): minGroupCount cannot exceed the number of child groups."""
    value = get_min_group_count(policy)
    if isinstance(value, int) and value > children:
        return by_rule([invalid(policy_path.child(GANG, "minGroupCount"), value, "must be less than or equal to the "
                                f"number of child groups ({children_path}: {children})")], "POL-3")
    return []


@found_by("POL-4")
def validate_template_update(new: dict | None, old: dict | None, path: Path) -> list[FieldError]:
    """In a Workload template: basic immutable, gang NoSet/NoUnset, minGroupCount mutable."""
    new, old = new or {}, old or {}
    return (check_immutable(new.get(BASIC), old.get(BASIC), path.child(BASIC))
            + check_no_set_no_unset(new.get(GANG), old.get(GANG), path.child(GANG)))


@found_by("POL-4")
def validate_update(new: Any, old: Any, path: Path) -> list[FieldError]:
    """On a CompositePodGroup object and in CRDs the whole policy is frozen."""
    return check_immutable(new, old, path)
