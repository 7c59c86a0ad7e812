"""CompositePodGroup: its blocks (a composite policy), identity and status."""
from __future__ import annotations

from webhook.config import Config
from webhook.verdict import Verdict
from webhook.rules.core import (SPEC, block_errors, block_update_errors, condition_errors, identity_update_errors, object_spec, parent_errors,
                                workload_ref_errors)


def validate_composite_podgroup(obj: dict, old: dict | None, cfg: Config) -> Verdict:
    found = Verdict()
    judged = object_spec(obj, old, "compositepodgroup", found)
    if judged is None:
        return found
    spec, old_spec = judged
    found.errors += parent_errors(spec, old_spec, cfg, gated=False)
    if old_spec is None or spec.get("workloadRef") is None:
        found.errors += workload_ref_errors(spec, required_ref=True)
    found.errors += block_errors(spec, old_spec, SPEC, cfg, leaf=False)
    if old_spec is not None:
        found.errors += identity_update_errors(spec, old_spec)
        found.errors += block_update_errors(spec, old_spec, SPEC, leaf=False, whole_policy_frozen=True)
    found.errors += condition_errors(obj)
    return found
