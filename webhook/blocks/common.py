"""Helpers shared by the block modules: unions, semantic equality, update rules."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhook.field import FieldError, OMIT, Path, by_rule, immutable, invalid

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Mode:
    """How a block is judged. `embedded` blocks live in a configured CRD: their
    counts are optional (the controller defaults them) and 0 is Invalid, not
    Required. Core objects mirror kube-apiserver."""
    embedded: bool = False
    count_required: bool = False     # embedded PodGroup object types: `gang.minCount` is required


CORE = Mode(embedded=False)
EMBEDDED = Mode(embedded=True)
OBJECT_TYPES = Mode(embedded=True, count_required=True)


def union(value: dict, path: Path, members: tuple[str, ...]) -> list[FieldError]:
    """`+k8s:union`: exactly one member set (upstream wording and value)."""
    present = [m for m in members if value.get(m) is not None]
    names = ", ".join(f"`{m}`" for m in members)
    if not present:
        return [invalid(path, "", f"must specify one of: {names}")]
    if len(present) > 1:
        return [invalid(path, "{" + ", ".join(present) + "}", f"must specify exactly one of: {names}")]
    return []


def variant(value: Any, members: tuple[str, ...]) -> str | None:
    """The single member set, or None (unset or ambiguous)."""
    if not isinstance(value, dict):
        return None
    present = [m for m in members if value.get(m) is not None]
    return present[0] if len(present) == 1 else None


# The blocks' string fields that are Go values, not pointers: absent and "" decode alike.
_VALUE_STRINGS = ("name", "key")


def norm(value: Any) -> Any:
    """Semantic form for comparisons: absent == null, an empty list == no list
    (`omitempty` drops both on the wire), and an absent claim name or topology
    key == "" (Go's zero value). An empty object stays: `basic: {}` is set."""
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items()
                if v is not None and v != [] and not (v == "" and k in _VALUE_STRINGS)}
    if isinstance(value, list):
        return [norm(v) for v in value] or None
    return value


def same(a: Any, b: Any) -> bool:
    return norm(a) == norm(b)


def check_immutable(new: Any, old: Any, path: Path) -> list[FieldError]:
    """`+k8s:immutable`: setting, clearing and changing are all rejected."""
    return [] if same(new, old) else [immutable(path, new)]


def check_no_set_no_unset(new: Any, old: Any, path: Path) -> list[FieldError]:
    """`+k8s:update=NoSet,NoUnset`: the value may change, not appear or vanish."""
    if old is None and new is not None:
        return [invalid(path, OMIT, "field cannot be set once created")]
    if old is not None and new is None:
        return [invalid(path, OMIT, "field cannot be cleared once set")]
    return []


def min_count(value: Any, path: Path, mode: Mode, limit: int | None = None, limit_name: str = "") -> list[FieldError]:
    """A required-in-objects / optional-in-CRDs count with minimum 1 (POL-2, CMP-1)."""
    if value is None or (value == 0 and not mode.embedded):
        return [] if mode.embedded and not mode.count_required else [FieldError("Required", path)]
    if value < 1:
        return [invalid(path, value, "must be greater than or equal to 1")]
    if limit is not None and value > limit:
        return by_rule([invalid(path, value, f"must be less than or equal to {limit}{limit_name}")], "POL-3")
    return []
