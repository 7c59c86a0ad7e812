"""Builder.validate's rules: each item's blocks judged by the engine's own block
rules (webhook/blocks: one implementation for the webhook and the builder), then,
on the resolved config, the controller's allow-lists and the one cross-field rule
declarative validation cannot express (Go: validate.go).

The blocks are judged as the webhook judges blocks embedded in a CRD (EMBEDDED:
counts optional, defaulted by the controller). On update (an old tree) each block
ratchets as declarative validation does: an unchanged value is not judged again,
a changed policy or claim list only where it changed."""
from __future__ import annotations

from typing import Any

from webhook.blocks import claims, composite, constraints, disruption, policy
from webhook.blocks.common import EMBEDDED, same
from webhook.builder.compile import resolve
from webhook.builder.types import (ALL_MODE, BASIC_POLICY, GANG_POLICY, SINGLE_MODE, BuildOptions,
                                   SchedulingConfig, WorkloadItem)
from webhook.field import FieldError, Path, forbidden, mirrors


def block_path(item: WorkloadItem, elements) -> Path:
    return item.path.child(*elements) if elements else item.path


def _judge(module, value: Any, old: Any, path: Path, updating: bool, rules) -> list[FieldError]:
    """Shape first (a malformed block gets only that); then the rules, unless the block is unchanged."""
    if value is None:
        return []
    shape = mirrors(module.shape(value, path), "TGT-2")
    if shape:
        return shape
    if updating and same(value, old):
        return []
    return rules()


def _declarative(item: WorkloadItem, old: WorkloadItem | None) -> list[FieldError]:
    inp, oin = item.input, old.input if old is not None else None
    updating = old is not None
    errors: list[FieldError] = []
    if item.composite:
        pol = inp.policy.composite_pod_group_data
        opol = oin.policy.composite_pod_group_data if oin else None
        p = block_path(item, inp.policy.path_elements)
        errors += _judge(composite, pol, opol, p, updating, lambda: composite.validate(pol, p, EMBEDDED))
        con, ocon = inp.constraints.composite_pod_group_data, oin.constraints.composite_pod_group_data if oin else None
        cp = block_path(item, inp.constraints.path_elements)
        errors += _judge(constraints, con, ocon, cp, updating, lambda: constraints.validate(con, cp))
        dis = inp.disruption_mode.composite_pod_group_data
        odis = oin.disruption_mode.composite_pod_group_data if oin else None
        dp = block_path(item, inp.disruption_mode.path_elements)
        errors += _judge(disruption, dis, odis, dp, updating, lambda: disruption.validate(dis, dp))
        return errors
    pol, opol = inp.policy.pod_group_data, oin.policy.pod_group_data if oin else None
    p = block_path(item, inp.policy.path_elements)
    errors += _judge(policy, pol, opol, p, updating,
                     lambda: policy.validate(pol, p, EMBEDDED, old=opol if updating else None))
    con, ocon = inp.constraints.pod_group_data, oin.constraints.pod_group_data if oin else None
    cp = block_path(item, inp.constraints.path_elements)
    errors += _judge(constraints, con, ocon, cp, updating, lambda: constraints.validate(con, cp))
    dis, odis = inp.disruption_mode.pod_group_data, oin.disruption_mode.pod_group_data if oin else None
    dp = block_path(item, inp.disruption_mode.path_elements)
    errors += _judge(disruption, dis, odis, dp, updating, lambda: disruption.validate(dis, dp))
    clm, oclm = inp.resource_claims.pod_group_data, oin.resource_claims.pod_group_data if oin else None
    kp = block_path(item, inp.resource_claims.path_elements)
    if clm:
        errors += _judge(claims, clm, oclm, kp, updating,
                         lambda: claims.validate(clm, kp, old=oclm if updating else None))
    return errors


def _allowed(item: WorkloadItem, cfg: SchedulingConfig, opts: BuildOptions) -> list[FieldError]:
    errors: list[FieldError] = []
    if cfg.policy is not None:
        p = block_path(item, item.input.policy.path_elements)
        if cfg.policy.basic and BASIC_POLICY not in opts.allowed_policies:
            errors.append(forbidden(p, "basic scheduling policy is not supported by this controller"))
        if cfg.policy.gang is not None and GANG_POLICY not in opts.allowed_policies:
            errors.append(forbidden(p, "gang scheduling policy is not supported by this controller"))
    if cfg.disruption_mode is not None:
        d = block_path(item, item.input.disruption_mode.path_elements)
        if cfg.disruption_mode.single and SINGLE_MODE not in opts.allowed_disruption_modes:
            errors.append(forbidden(d, "the disruptionMode `single` is not supported by this controller"))
        if cfg.disruption_mode.all and ALL_MODE not in opts.allowed_disruption_modes:
            errors.append(forbidden(d, "the disruptionMode `all` is not supported by this controller"))
    return errors


def _all_with_basic(item: WorkloadItem, cfg: SchedulingConfig) -> list[FieldError]:
    """DIS-2 on the resolved config: a basic group cannot be disrupted all at once.
    The engine's rule reports it (its words, its value)."""
    if cfg.policy is None or not cfg.policy.basic or cfg.disruption_mode is None or not cfg.disruption_mode.all:
        return []
    blk = item.input.policy
    user = blk.composite_pod_group_data if item.composite else blk.pod_group_data
    # How the engine names the policy it read: its variant; for a leaf, basic when the block is
    # empty (the group's default); a composite's unset policy is "not set, which resolves to basic".
    kind = composite.kind_of(user) if item.composite else policy.kind_of(user) if user else BASIC_POLICY
    return disruption.validate_against_policy({"all": {}}, block_path(item, item.input.disruption_mode.path_elements),
                                              kind, block_path(item, blk.path_elements))


def _well_formed(item: WorkloadItem) -> bool:
    """As the engine: DIS-2 does not read a policy or a mode whose shape is wrong."""
    pol, dis = item.input.policy, item.input.disruption_mode
    pmod, pval = (composite, pol.composite_pod_group_data) if item.composite else (policy, pol.pod_group_data)
    dval = dis.composite_pod_group_data if item.composite else dis.pod_group_data
    return not ((pval is not None and pmod.shape(pval, block_path(item, pol.path_elements)))
                or (dval is not None and disruption.shape(dval, block_path(item, dis.path_elements))))


def validate_item(item: WorkloadItem, old: WorkloadItem | None, opts: BuildOptions) -> list[FieldError]:
    """One item's errors, then its children's (matched with the old tree's by name, one level at a time)."""
    errors = [] if opts.disable_declarative_validation else _declarative(item, old)
    cfg = resolve(item)
    errors += _allowed(item, cfg, opts)
    if _well_formed(item):
        errors += _all_with_basic(item, cfg)
    old_children = {c.name: c for c in old.children if c is not None} if old is not None else {}
    for child in item.children:
        errors += validate_item(child, old_children.get(child.name), opts)
    return errors
