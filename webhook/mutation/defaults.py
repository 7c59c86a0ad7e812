"""DEF-1: defaults for target CRDs at CREATE, as the upstream type comments ask
of controllers: a gang's `minCount` is the group's size, a composite gang's
`minGroupCount` the number of child groups. Set values are never overwritten.
A group whose size is missing, not a number, below 1 (scaled to zero) or above
`limits.maxMinCount` keeps an unset `minCount`: any value written there would
be refused by POL-2/POL-3 on the very same request."""
from __future__ import annotations

import copy

from webhook.blocks import composite, policy
from webhook.blocks.common import INT32_MAX
from webhook.targets import Target
from webhook.field import FieldError
from webhook.paths import get_or_none
from webhook.rules.crd import composite_instance, leaf_instances


def default_target(obj: dict, target: Target, max_min_count: int | None = None) -> dict:
    """A defaulted copy of `obj` (equal to it when nothing needed a default)."""
    mutated = copy.deepcopy(obj)
    ignored: list[FieldError] = []     # shape problems are the validating webhook's to report
    for group in target.groups:
        if not group.semantics.defaultMinCount or group.semantics.minCount == "unset":
            continue       # the operator computes it (and `unset` forbids a value)
        for inst in leaf_instances(obj, None, group, ignored):
            pol = inst.blocks.get("schedulingPolicy")
            size = inst.size
            if pol is None or not pol.ok or policy.kind_of(pol.value) != policy.GANG:
                continue
            if policy.get_min_count(pol.value) is None and isinstance(size, int) and not isinstance(size, bool) \
                    and 1 <= size <= min(max_min_count or INT32_MAX, INT32_MAX):
                get_or_none(mutated, pol.path)[policy.GANG]["minCount"] = size
    if target.composite is not None:
        blocks, _, count = composite_instance(obj, None, target.composite, ignored)
        pol = blocks["schedulingPolicy"]
        if pol.ok and composite.kind_of(pol.value) == composite.GANG and count \
                and composite.get_min_group_count(pol.value) is None:
            get_or_none(mutated, pol.path)[composite.GANG]["minGroupCount"] = count
    return mutated
