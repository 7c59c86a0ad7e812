"""CRDs configured as targets: the building blocks wherever the config says
they sit (TGT-1..3), with size bounds (POL-3) and update rules (POL-4).
Errors carry the CRD's own field paths."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from webhook.blocks import claims, composite, constraints, disruption, policy
from webhook.blocks.common import EMBEDDED, OBJECT_TYPES, check_no_set_no_unset, same
from webhook.config import Config
from webhook.targets import CompositeGroup, LeafGroup, Target
from webhook.field import FieldError, Path, by_rule, forbidden, invalid, mirrors, too_many
from webhook.verdict import Verdict
from webhook.paths import FieldPath, WrongType, get, get_or_none, old_indices
from webhook.semantics import Semantics
from webhook.rules import bounds, checks, size as sizes
from webhook.rules.conditions import holds


# Per block: (module with shape/validate_update, config key)
_LEAF_BLOCKS = (("schedulingPolicy", policy), ("schedulingConstraints", constraints),
                ("disruptionMode", disruption), ("resourceClaims", claims))


@dataclass
class Block:
    """One block of one group instance, resolved to a concrete path."""
    path: Path
    value: Any
    old: Any = None
    ok: bool = True       # shape is right, rules may read it

    @property
    def changed(self) -> bool:
        return not same(self.value, self.old)


@dataclass
class Instance:
    """One leaf group of an object (one binding of the `[*]` indices)."""
    blocks: dict[str, Block]
    size: int | None = None
    size_name: str | None = None        # how messages name the size (a path, or the sum)
    old_size: int | None = None
    updating: bool = False   # False for a create, and for a list item the stored object did not have
    holder: Block | None = None         # the field holding the blocks, when it is set-once
    guards: list = field(default_factory=list)   # (path, value, holds now, held before) of gangIncompatible
    unbounded: bool = False             # `boundUnless` holds: POL-3 does not apply


def _resolve(obj: Any, fp: FieldPath, idx: tuple[int, ...], errors: list[FieldError]) -> tuple[Path, Any, bool]:
    path = fp.concrete(idx)
    try:
        return path, get(obj, path), True
    except WrongType as exc:
        errors += mirrors([exc.error], "TGT-2")
        return path, None, False


def _old_block(old: dict | None, fp: FieldPath, idx: tuple[int, ...] | None, module) -> Any:
    """The stored block at the same place; a malformed one counts as absent."""
    if old is None or idx is None:
        return None
    path, value, ok = _resolve(old, fp, idx, [])
    return value if ok and not module.shape(value, path) else None


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not 1, 1 is not "1"."""
    return type(a) is type(b) and a == b


def leaf_instances(obj: dict, old: dict | None, group: LeafGroup, errors: list[FieldError]) -> Iterator[Instance]:
    """Every leaf group instance the config entry describes in `obj` (TGT-3 fan-out)."""
    paths = group.paths()
    deepest = max(paths.values(), key=lambda p: p.wildcards)
    bindings, problems = deepest.bindings(obj)
    errors += mirrors(problems, "TGT-2")
    for idx in bindings:
        old_idx = old_indices(obj, old, deepest, idx) if old is not None else None
        unbound = group.semantics.boundUnless
        inst = Instance(blocks={}, updating=old_idx is not None,
                        unbounded=unbound is not None and holds(unbound, obj, old, idx, deepest))
        for key, module in _LEAF_BLOCKS:
            if key not in paths:
                continue
            path, value, ok = _resolve(obj, paths[key], idx, errors)
            shape = module.shape(value, path) if ok else []
            errors += mirrors(shape, "TGT-2")
            inst.blocks[key] = Block(path, value, _old_block(old, paths[key], old_idx, module), ok and not shape)
        if group.size is not None:
            inst.size, inst.size_name = sizes.evaluate(obj, group.size, idx, errors)
            inst.size_name = str(inst.size_name)
            if old_idx is not None:
                inst.old_size = sizes.evaluate(old, group.size, old_idx)[0]
        for gp, value in group.semantics.gangIncompatible:
            at = gp.concrete(idx)
            before = old_idx is not None and _same_json(get_or_none(old, gp.concrete(old_idx)), value)
            inst.guards.append((at, value, _same_json(get_or_none(obj, at), value), before))
        if group.semantics.setOnce is not None:
            hp = group.semantics.setOnce.concrete(idx)
            old_holder = get_or_none(old, group.semantics.setOnce.concrete(old_idx)) if old_idx is not None else None
            inst.holder = Block(hp, get_or_none(obj, hp), old_holder)
        yield inst


def _without_nonpositive(value: Any) -> Any:
    count = policy.get_min_count(value)
    if isinstance(count, int) and not isinstance(count, bool) and count <= 0:
        return {**value, "gang": {k: v for k, v in value["gang"].items() if k != "minCount"}}
    return value


def _positive_min_count(pol: Block) -> Block:
    """The policy as JobSet reads it, new and stored alike: a gang minCount <= 0 is unset."""
    return Block(pol.path, _without_nonpositive(pol.value), _without_nonpositive(pol.old), pol.ok)


def _gang_incompatible(inst: Instance, pol: Block | None, sem: Semantics) -> list[FieldError]:
    """A gang (set, or the default for an unset policy) next to a value it cannot work with."""
    value = pol.value if pol else None
    unset = not isinstance(value, dict) or all(value.get(m) is None for m in policy.MEMBERS)
    if pol is None or not (policy.kind_of(value) == policy.GANG or (unset and sem.defaultPolicy == policy.GANG)):
        return []
    return by_rule([forbidden(pol.path.child("gang"), f"gang scheduling is incompatible with {path} {shown}")
                    for path, shown, holds, held in inst.guards
                    if holds and not (inst.updating and held and not pol.changed)], "TGT-10")


def _validate_leaf(inst: Instance, sem: Semantics, cfg: Config) -> list[FieldError]:
    errors: list[FieldError] = []
    b = inst.blocks
    pol, dis, con, clm = (b.get(k) for k in ("schedulingPolicy", "disruptionMode", "schedulingConstraints", "resourceClaims"))
    updating = inst.updating
    mode = OBJECT_TYPES if sem.minCountRequired else EMBEDDED
    if sem.nonPositiveMinCountIsUnset and pol and pol.ok:
        pol = _positive_min_count(pol)
    held: list[FieldError] = []
    if inst.updating and inst.holder is not None:
        # `+k8s:update=NoSet,NoUnset` on the field holding the blocks short-circuits the blocks' own
        # rules, as in kube-apiserver; a Job's hand-written rules (POL-3, DIS-2 below) still run.
        held = by_rule(check_no_set_no_unset(inst.holder.value, inst.holder.old, inst.holder.path), "TGT-4")
        errors += held
    # Create-time rules; on update only what changed, field by field (ratcheting). A frozen
    # policy added or removed gets only that error (reported below), as declarative validation's
    # `+k8s:update=NoSet,NoUnset` short-circuits the policy's own rules.
    added_or_removed = bool(updating and sem.frozenBlocks and pol and pol.ok
                            and policy.set_once_errors(pol.value, pol.old, pol.path))
    if pol and pol.ok and (not updating or pol.changed) and not added_or_removed and not held:
        errors += policy.validate(pol.value, pol.path, mode, cfg.maxMinCount, old=pol.old if updating else None)
    # Frozen blocks: on update only the change itself is reported (as DV's immutable does);
    # blocks that may change (frozenBlocks: false) are judged as on create when they changed.
    def judged(blk: Block | None) -> bool:
        return bool(blk and blk.ok and not held and (not updating or (not sem.frozenBlocks and blk.changed)))
    if judged(dis):
        errors += disruption.validate(dis.value, dis.path)
    if judged(con):
        errors += constraints.validate(con.value, con.path, cfg.allowedTopologyKeys)
    if judged(clm):
        errors += claims.validate(clm.value, clm.path, old=clm.old if updating else None)
    if cfg.forbidAllWithBasic and dis and dis.ok and (pol is None or pol.ok) \
            and (not updating or dis.changed or (pol is not None and pol.changed)):
        kind = (policy.kind_of(pol.value) if pol else None) or (sem.defaultPolicy if not (pol and pol.value) else None)
        errors += disruption.validate_against_policy(dis.value, dis.path, kind, pol.path if pol else None)
    if sem.gangIncompatible and (pol is None or pol.ok):
        errors += _gang_incompatible(inst, pol, sem)
    # POL-3: minCount against the group's size, re-checked whenever either moves; one error per field.
    count_path = pol.path.child("gang", "minCount") if pol else None
    if cfg.minCountWithinSize and pol and pol.ok and inst.size_name is not None and not inst.unbounded \
            and not any(e.field == count_path for e in errors):
        moved = not updating or pol.changed or inst.size != inst.old_size
        if moved:
            errors += bounds.min_count_against_size(policy.get_min_count(pol.value), pol.path, sem.minCount,
                                                    inst.size, inst.size_name)
    if updating and sem.frozenBlocks and not held:
        if pol and pol.ok:
            errors += policy.validate_update(pol.value, pol.old, pol.path, EMBEDDED)
        for blk, module in ((dis, disruption), (con, constraints), (clm, claims)):
            if blk and blk.ok:
                errors += module.validate_update(blk.value, blk.old, blk.path)
    return errors


def composite_instance(obj: dict, old: dict | None, comp: CompositeGroup,
                       errors: list[FieldError]) -> tuple[dict[str, Block], Path, int | None]:
    blocks: dict[str, Block] = {}
    for key, module in (("schedulingPolicy", composite), ("schedulingConstraints", constraints),
                        ("disruptionMode", disruption)):
        fp = getattr(comp, key)
        if fp is None:
            continue
        path, value, ok = _resolve(obj, fp, (), errors)
        shape = module.shape(value, path) if ok else []
        errors += mirrors(shape, "TGT-2")
        blocks[key] = Block(path, value, _old_block(old, fp, (), module), ok and not shape)
    cpath, children, ok = _resolve(obj, comp.children, (), errors)
    count = None
    if ok:
        if children is None:
            count = 0
        elif isinstance(children, list):
            count = len(children)
        else:
            errors.append(invalid(cpath, children, "must be of type list"))
    return blocks, cpath, count


def _validate_composite(obj: dict, old: dict | None, comp: CompositeGroup, cfg: Config) -> list[FieldError]:
    errors: list[FieldError] = []
    blocks, cpath, count = composite_instance(obj, old, comp, errors)
    updating = old is not None
    old_count = composite_instance(old, None, comp, [])[2] if updating else None
    pol, dis, con = (blocks.get(k) for k in ("schedulingPolicy", "disruptionMode", "schedulingConstraints"))
    if pol.ok and not updating:
        errors += composite.validate(pol.value, pol.path, EMBEDDED)
    # CMP-1: a composite group (any of its blocks set) has at least one child; POL-3 bounds minGroupCount.
    if count is not None and (not updating or count != old_count):
        if any(b.ok and b.value is not None for b in blocks.values()):
            errors += composite.validate_children(count, cpath)
        if pol.ok and pol.value is not None and cfg.minCountWithinSize:
            errors += composite.validate_bound(pol.value, pol.path, count, cpath)
    if dis and dis.ok and not updating:
        errors += disruption.validate(dis.value, dis.path)
    if con and con.ok and not updating:
        errors += constraints.validate(con.value, con.path, cfg.allowedTopologyKeys)
    if cfg.forbidAllWithBasic and dis and dis.ok and pol.ok and (not updating or dis.changed or pol.changed):
        errors += disruption.validate_against_policy(dis.value, dis.path, composite.kind_of(pol.value), pol.path)
    if updating:
        for blk, module in ((pol, composite), (dis, disruption), (con, constraints)):
            if blk and blk.ok:
                errors += module.validate_update(blk.value, blk.old, blk.path)
    return errors


def _groups_in(obj: dict, group: LeafGroup) -> int:
    return sum(1 for inst in leaf_instances(obj, None, group, []) if any(b.value is not None for b in inst.blocks.values()))


def _too_many_groups(used: list[Instance], cap: int) -> FieldError:
    """TooMany at the list the groups fan out over (the root when they do not)."""
    path = next(iter(used[cap].blocks.values())).path
    last = max((i for i, seg in enumerate(path) if isinstance(seg, int)), default=0)
    return by_rule([too_many(Path(*path[:last]), len(used), cap)], "TGT-11")[0]


def validate_target(obj: dict, old: dict | None, target: Target, cfg: Config) -> Verdict:
    found = Verdict()
    if not isinstance(obj, dict):
        found.errors.append(invalid(Path(), obj, "must be of type object"))
        return found
    for group in target.groups:
        used: list[Instance] = []
        for inst in leaf_instances(obj, old, group, found.errors):
            found.errors += _validate_leaf(inst, group.semantics, cfg)
            if any(b.value is not None for b in inst.blocks.values()):
                used.append(inst)
        cap = group.semantics.maxGroups
        if cap is not None and len(used) > cap and (old is None or len(used) > _groups_in(old, group)):
            found.errors.append(_too_many_groups(used, cap))      # ratchets: only when the update adds groups
    if target.composite is not None:
        found.errors += _validate_composite(obj, old, target.composite, cfg)
    if target.checks:
        alone = checks.standalone(obj, old, target)      # the operator stops there: nothing else is reported
        found.errors = alone or found.errors + checks.validate(obj, old, target)
    return found
