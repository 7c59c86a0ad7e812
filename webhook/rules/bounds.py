"""POL-3 as a target states it: `gang.minCount` against the group's size
(≤, =, must not be set, or no rule). The size's absence (unknown) never
denies; a minCount that is not a number is the shape check's to report."""
from __future__ import annotations

from typing import Any

from webhook.field import FieldError, Path, by_rule, forbidden, invalid


def min_count_against_size(count: Any, policy_path: Path, rule: str, size: int | None, size_name: str) -> list[FieldError]:
    return by_rule(_against(count, policy_path, rule, size, size_name), "POL-3")


def _against(count: Any, policy_path: Path, rule: str, size: int | None, size_name: str) -> list[FieldError]:
    path = policy_path.child("gang", "minCount")
    if isinstance(count, float) and count.is_integer():
        count = int(count)          # YAML `7.0` read offline; JSON Schema's "integer" accepts it too
    if rule == "unset":
        return [forbidden(path, "is set by the operator from the group's size; leave it unset")] if count is not None else []
    if rule == "any" or size is None or not isinstance(count, int) or isinstance(count, bool):
        return []
    if rule == "equalsSize" and count != size:
        return [invalid(path, count, f"must be equal to {size_name} ({size})")]
    if rule == "atMostSize" and count > size:
        return [invalid(path, count, f"must be less than or equal to {size_name} ({size})")]
    return []
