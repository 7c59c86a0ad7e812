"""DRA resource claims shared by a whole pod group (CLM-1).

Upstream: PodGroupResourceClaim / WorkloadPodGroupResourceClaim; listType=map
keyed by `name`, maxItems 4, exactly one of the two references, immutable.
As declarative validation reads them: a reference counts as set when it is
present (`""` is set, and then not a DNS subdomain), and names are unique as
written (two empty or malformed names are duplicates too).
"""
from __future__ import annotations

from typing import Any

from webhook import formats
from webhook.blocks.common import check_immutable, same, union
from webhook.field import FieldError, Path, duplicate, found_by, invalid, required, too_many
from webhook.schemas import structural_errors

SCHEMA = "blocks/resource-claims"
MAX_CLAIMS = 4
REFS = ("resourceClaimName", "resourceClaimTemplateName")


def shape(value: Any, path: Path) -> list[FieldError]:
    return structural_errors(SCHEMA, value, path)


@found_by("CLM-1")
def validate(value: list | None, path: Path, old: list | None = None) -> list[FieldError]:
    """On update (`old`: the stored list) a claim is judged only where it changed, as
    declarative validation ratchets: an unchanged claim (matched by name) not at all,
    a changed one field by field. The list's own rules (at most 4, unique names) are
    always judged."""
    if not value:
        return []
    if len(value) > MAX_CLAIMS:
        return [too_many(path, len(value), MAX_CLAIMS)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(value):
        key = claim.get("name") or ""            # Go's zero value: an absent name is ""
        if key in seen:
            errors.append(duplicate(path.index(i), {"name": claim.get("name")}))
        seen.add(key)
    for i, claim in enumerate(value):
        stored = _stored(claim, old)
        if stored is None or not same(claim, stored):
            errors += _claim_errors(claim, path.index(i), stored)
    return errors


def _stored(claim: dict, old: list | None) -> dict | None:
    """The stored claim of the same name (the first, as upstream's lookup), or None."""
    key = claim.get("name") or ""
    return next((c for c in old or () if isinstance(c, dict) and (c.get("name") or "") == key), None)


def _claim_errors(claim: dict, cpath: Path, stored: dict | None) -> list[FieldError]:
    def moved(k: str) -> bool:
        return stored is None or not same(claim.get(k), stored.get(k))
    name_moved = stored is None or (claim.get("name") or "") != (stored.get("name") or "")
    errors: list[FieldError] = []
    name = claim.get("name")
    if name_moved:
        if not name:
            errors.append(required(cpath.child("name")))
        elif problem := formats.dns_label(name):
            errors.append(invalid(cpath.child("name"), name, problem))
    if stored is None or _references(claim) != _references(stored):
        errors += union({k: claim.get(k) for k in REFS}, cpath, REFS)
    for ref in REFS:
        if claim.get(ref) is not None and moved(ref) and (problem := formats.dns_subdomain(claim[ref])):
            errors.append(invalid(cpath.child(ref), claim[ref], problem))
    return errors


def _references(claim: dict) -> tuple[bool, ...]:
    """Which references are set: present and not null."""
    return tuple(claim.get(k) is not None for k in REFS)


@found_by("CLM-1")
def validate_update(new: Any, old: Any, path: Path) -> list[FieldError]:
    """Immutable; a changed list over the limit also gets TooMany, as upstream's
    `+k8s:immutable` and `+k8s:maxItems` both run before either short-circuits."""
    errors = check_immutable(new, old, path)
    if errors and isinstance(new, list) and len(new) > MAX_CLAIMS:
        errors.append(too_many(path, len(new), MAX_CLAIMS))
    return errors


def reference(claim: dict) -> tuple:
    """What makes two claim entries "the same claim" for pods (name and reference)."""
    return (claim.get("name"), claim.get("resourceClaimName") or None, claim.get("resourceClaimTemplateName") or None)
