"""DRA resource claims shared by a whole pod group (CLM-1).

Upstream: PodGroupResourceClaim / WorkloadPodGroupResourceClaim; listType=map
keyed by `name`, maxItems 4, exactly one of the two references, immutable.
"""
from __future__ import annotations

from typing import Any

from webhook import formats
from webhook.blocks.common import check_immutable, union
from webhook.field import FieldError, Path, duplicate, invalid, required, too_many
from webhook.schemas import structural_errors

SCHEMA = "blocks/resource-claims"
MAX_CLAIMS = 4
REFS = ("resourceClaimName", "resourceClaimTemplateName")


def shape(value: Any, path: Path) -> list[FieldError]:
    return structural_errors(SCHEMA, value, path)


def validate(value: list | None, path: Path) -> list[FieldError]:
    if not value:
        return []
    if len(value) > MAX_CLAIMS:
        return [too_many(path, len(value), MAX_CLAIMS)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(value):
        cpath = path.index(i)
        name = claim.get("name")
        if not name:
            errors.append(required(cpath.child("name")))
        elif problem := formats.dns_label(name):
            errors.append(invalid(cpath.child("name"), name, problem))
        elif name in seen:
            errors.append(duplicate(cpath, {"name": name}))
        seen.add(name or "")
        errors += union({k: claim.get(k) or None for k in REFS}, cpath, REFS)
        for ref in REFS:
            if claim.get(ref) and (problem := formats.dns_subdomain(claim[ref])):
                errors.append(invalid(cpath.child(ref), claim[ref], problem))
    return errors


def validate_update(new: Any, old: Any, path: Path) -> list[FieldError]:
    return check_immutable(new, old, path)


def reference(claim: dict) -> tuple:
    """What makes two claim entries "the same claim" for pods (name and reference)."""
    return (claim.get("name"), claim.get("resourceClaimName") or None, claim.get("resourceClaimTemplateName") or None)
