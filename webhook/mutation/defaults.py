"""DEF-1: defaults for target CRDs at CREATE, as the upstream type comments ask
of controllers: a gang's `minCount` is the group's size (at least 1), a
composite gang's `minGroupCount` the number of child groups. Set values are
never overwritten; a group without a size keeps an unset `minCount`."""
from __future__ import annotations

import copy

from webhook.blocks import composite, policy
from webhook.blocks.common import INT32_MAX
from webhook.config import Target
from webhook.errors import FieldError
from webhook.paths import get_or_none
from webhook.targets.crd import composite_instance, leaf_instances


def default_target(obj: dict, target: Target) -> dict:
    """A defaulted copy of `obj` (equal to it when nothing needed a default)."""
    mutated = copy.deepcopy(obj)
    ignored: list[FieldError] = []     # shape problems are the validating webhook's to report
    for group in target.groups:
        for inst in leaf_instances(obj, None, group, ignored):
            pol = inst.blocks.get("schedulingPolicy")
            size = inst.size
            if pol is None or not pol.ok or policy.kind_of(pol.value) != policy.GANG:
                continue
            if policy.get_min_count(pol.value) is None and isinstance(size, int) and not isinstance(size, bool):
                get_or_none(mutated, pol.path)[policy.GANG]["minCount"] = min(max(size, 1), INT32_MAX)
    if target.composite is not None:
        blocks, _, count = composite_instance(obj, None, target.composite, ignored)
        pol = blocks["schedulingPolicy"]
        if pol.ok and composite.kind_of(pol.value) == composite.GANG and count \
                and composite.get_min_group_count(pol.value) is None:
            get_or_none(mutated, pol.path)[composite.GANG]["minGroupCount"] = count
    return mutated
