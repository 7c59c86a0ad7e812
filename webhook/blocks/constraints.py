"""Scheduling constraints: `topology: [{key}]`, at most one entry (CON-1)."""
from __future__ import annotations

from typing import Any, Sequence

from webhook import formats
from webhook.blocks.common import check_immutable
from webhook.field import FieldError, Path, by_rule, found_by, invalid, not_supported, required, too_many
from webhook.schemas import structural_errors

SCHEMA = "blocks/scheduling-constraints"
MAX_TOPOLOGY = 1


def shape(value: Any, path: Path) -> list[FieldError]:
    return structural_errors(SCHEMA, value, path)


@found_by("CON-1")
def validate(value: dict | None, path: Path, allowed_keys: Sequence[str] = ()) -> list[FieldError]:
    if value is None:
        return []
    topology = value.get("topology") or []
    tpath = path.child("topology")
    if len(topology) > MAX_TOPOLOGY:
        return [too_many(tpath, len(topology), MAX_TOPOLOGY)]
    errors: list[FieldError] = []
    for i, entry in enumerate(topology):
        key, kpath = entry.get("key"), tpath.index(i).child("key")
        if not key:
            errors.append(required(kpath))
        elif problem := formats.qualified_name(key):
            errors.append(invalid(kpath, key, problem))
        elif allowed_keys and key not in allowed_keys:
            errors += by_rule([not_supported(kpath, key, allowed_keys)], "CON-1")   # limits.allowedTopologyKeys
    return errors


@found_by("CON-1")
def validate_update(new: Any, old: Any, path: Path) -> list[FieldError]:
    return check_immutable(new, old, path)
