"""Pod group scheduling policy: `basic: {}` | `gang: {minCount}` (POL-1, POL-2, POL-4).

Upstream: PodGroupSchedulingPolicy (Workload templates, PodGroup) and
WorkloadPodGroupSchedulingPolicy (embedded in CRDs), scheduling/v1alpha3/types.go.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from webhook.blocks.common import Mode, check_immutable, check_no_set_no_unset, min_count, union, variant
from webhook.field import FieldError, Path, found_by, invalid, mirrors
from webhook.schemas import structural_errors

SCHEMA = "blocks/scheduling-policy"
MEMBERS = ("basic", "gang")
BASIC, GANG = MEMBERS
#: The code of the error "the basic/gang policy variant is immutable" (FieldError.code): an
#: embedding that does not freeze the variant (a CronJob's Job template) leaves it out by it.
VARIANT_FROZEN = "policy-variant-frozen"


def shape(value: Any, path: Path) -> list[FieldError]:
    return structural_errors(SCHEMA, value, path)


def kind_of(value: Any) -> str | None:
    """'basic', 'gang' or None. An absent policy resolves to basic when compiled."""
    return variant(value, MEMBERS)


def get_min_count(value: Any) -> Any:
    return (value.get(GANG) or {}).get("minCount") if isinstance(value, dict) else None


def validate(value: dict | None, path: Path, mode: Mode, max_min_count: int | None = None,
             old: dict | None = None) -> list[FieldError]:
    """POL-1 union, POL-2 minCount. A missing policy is fine only in a CRD
    (it resolves to basic); on Workload/PodGroup it is a required struct.
    On update (`old`: the stored policy) each field ratchets as declarative
    validation does: the union only when its members changed, `minCount` only
    when it changed."""
    if value is None:
        return [] if mode.embedded else mirrors(union({}, path, MEMBERS), "POL-1")
    errors = [] if old is not None and members_set(old) == members_set(value) else \
        mirrors(union(value, path, MEMBERS), "POL-1")
    gang = value.get(GANG)
    old_gang = old.get(GANG) if old is not None else None
    if gang is not None and not (old_gang is not None and gang.get("minCount") == old_gang.get("minCount")):
        errors += mirrors(min_count(gang.get("minCount"), path.child(GANG, "minCount"), mode,
                                    max_min_count, " (limits.maxMinCount)"), "POL-2")
    return errors


def members_set(value: Any) -> tuple[bool, ...]:
    """Which of basic and gang are set (present and not null): what the union reads."""
    return tuple(isinstance(value, dict) and value.get(m) is not None for m in MEMBERS)


@found_by("POL-4")
def set_once_errors(new: dict | None, old: dict | None, path: Path) -> list[FieldError]:
    """An embedded policy cannot be added or removed on update (`+k8s:update=NoSet,NoUnset`).
    That error short-circuits the policy's own rules (POL-1, POL-2), as declarative validation does."""
    return check_no_set_no_unset(new, old, path)


@found_by("POL-4")
def validate_update(new: dict | None, old: dict | None, path: Path, mode: Mode) -> list[FieldError]:
    """POL-4: the variant is frozen, `gang.minCount` may change."""
    if not mode.embedded:
        # Mirror of the DV tags: basic `+k8s:immutable`, gang `+k8s:update=NoSet,NoUnset`.
        new, old = new or {}, old or {}
        return (check_immutable(new.get(BASIC), old.get(BASIC), path.child(BASIC))
                + check_no_set_no_unset(new.get(GANG), old.get(GANG), path.child(GANG)))
    errors = set_once_errors(new, old, path)
    if errors or new is None or old is None:
        return errors
    # As a Job's validateJobSchedulingUpdate: the variant is whether `basic` is set, however
    # well-formed either side is ({basic, gang} -> {gang} switches it too).
    was, now = _variant_name(old), _variant_name(new)
    if (old.get(BASIC) is not None) != (new.get(BASIC) is not None):
        # Where and how a Job reports it (batch validateJobSchedulingUpdate).
        return [dataclasses.replace(invalid(path, None, f"the basic/gang policy variant is immutable after creation "
                                                        f"({was} → {now}); only schedulingPolicy.gang.minCount may be "
                                                        "updated"), code=VARIANT_FROZEN)]
    return []


def _variant_name(value: dict) -> str:
    return " and ".join(m for m, on in zip(MEMBERS, members_set(value)) if on) or "no variant"
