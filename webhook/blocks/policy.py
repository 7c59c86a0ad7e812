"""Pod group scheduling policy: `basic: {}` | `gang: {minCount}` (POL-1, POL-2, POL-4).

Upstream: PodGroupSchedulingPolicy (Workload templates, PodGroup) and
WorkloadPodGroupSchedulingPolicy (embedded in CRDs), scheduling/v1alpha3/types.go.
"""
from __future__ import annotations

from typing import Any

from webhook.blocks.common import Mode, check_immutable, check_no_set_no_unset, min_count, union, variant
from webhook.field import FieldError, Path, invalid
from webhook.schemas import structural_errors

SCHEMA = "blocks/scheduling-policy"
MEMBERS = ("basic", "gang")
BASIC, GANG = MEMBERS


def shape(value: Any, path: Path) -> list[FieldError]:
    return structural_errors(SCHEMA, value, path)


def kind_of(value: Any) -> str | None:
    """'basic', 'gang' or None. An absent policy resolves to basic when compiled."""
    return variant(value, MEMBERS)


def get_min_count(value: Any) -> Any:
    return (value.get(GANG) or {}).get("minCount") if isinstance(value, dict) else None


def validate(value: dict | None, path: Path, mode: Mode, max_min_count: int | None = None) -> list[FieldError]:
    """POL-1 union, POL-2 minCount. A missing policy is fine only in a CRD
    (it resolves to basic); on Workload/PodGroup it is a required struct."""
    if value is None:
        return [] if mode.embedded else union({}, path, MEMBERS)
    errors = union(value, path, MEMBERS)
    if value.get(GANG) is not None:
        errors += min_count(value[GANG].get("minCount"), path.child(GANG, "minCount"), mode,
                            max_min_count, " (limits.maxMinCount)")
    return errors


def validate_update(new: dict | None, old: dict | None, path: Path, mode: Mode) -> list[FieldError]:
    """POL-4: the variant is frozen, `gang.minCount` may change."""
    if not mode.embedded:
        # Mirror of the DV tags: basic `+k8s:immutable`, gang `+k8s:update=NoSet,NoUnset`.
        new, old = new or {}, old or {}
        return (check_immutable(new.get(BASIC), old.get(BASIC), path.child(BASIC))
                + check_no_set_no_unset(new.get(GANG), old.get(GANG), path.child(GANG)))
    errors = check_no_set_no_unset(new, old, path)
    if errors:
        return errors
    was, now = kind_of(old), kind_of(new)
    if was and now and was != now:
        # Where and how a Job reports it (batch validateJobSchedulingUpdate).
        return [invalid(path, None, f"the basic/gang policy variant is immutable after creation ({was} → {now}); "
                                    "only schedulingPolicy.gang.minCount may be updated")]
    return []
