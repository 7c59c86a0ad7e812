"""Disruption mode: `single: {}` | `all: {}` (DIS-1, DIS-2, DIS-3)."""
from __future__ import annotations

from typing import Any

from webhook.blocks.common import check_immutable, union, variant
from webhook.field import FieldError, Path, by_rule, found_by, invalid
from webhook.schemas import structural_errors

SCHEMA = "blocks/disruption-mode"
MEMBERS = ("single", "all")
SINGLE, ALL = MEMBERS


def shape(value: Any, path: Path) -> list[FieldError]:
    return structural_errors(SCHEMA, value, path)


def kind_of(value: Any) -> str | None:
    return variant(value, MEMBERS)


def resolved_kind(value: Any) -> str:
    """An unset mode is `single` (the PodGroup default)."""
    return kind_of(value) or SINGLE


@found_by("DIS-1")
def validate(value: dict | None, path: Path) -> list[FieldError]:
    """DIS-1. Optional everywhere (PodGroup and CompositePodGroup default it)."""
    return [] if value is None else union(value, path, MEMBERS)


def validate_against_policy(mode: Any, mode_path: Path, policy_kind: str | None,
                            policy_path: Path | None) -> list[FieldError]:
    """DIS-2 (policy; upstream in workloadbuilder and Job): `all` needs a gang policy.
    A missing policy resolves to basic. The detail starts with the builder's own words."""
    if kind_of(mode) != ALL or policy_kind == "gang":
        return []
    if policy_path is None:
        state = "this object has no scheduling policy, which resolves to basic"
    else:
        state = f"{policy_path} is " + ("basic" if policy_kind == "basic" else "not set, which resolves to basic")
    return by_rule([invalid(mode_path, {"all": {}}, "the disruptionMode `all` is not supported with the Basic scheduling "
                                            f'policy ({state}); "all" requires a gang scheduling policy')], "DIS-2")


@found_by("DIS-3")
def validate_update(new: Any, old: Any, path: Path) -> list[FieldError]:
    """DIS-3: add, remove and change are all rejected."""
    return check_immutable(new, old, path)
