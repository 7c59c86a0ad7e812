"""Object-wide rules a target states (webhook.semantics.Checks): path groups
that exclude each other (TGT-5), fields the operator owns (TGT-6), names that
must reference list items, each at most once (TGT-7), list lengths required
by another field (TGT-8), and fields frozen after create (TGT-9); and the
operators' own rules in their words (a OperatorWording: mirrors, no rule id in their text), whose
families live beside this module: values that agree and items that match
(agreement), fields refused or required under a condition (guards).

On update a rule reports only what the update touched (ratcheting), so an
object stored before the rule existed can live on. List items are matched
with the stored ones by `name` (by position when they have none), as the
leaf groups do: removing an earlier item never makes a later one "changed",
and an item the stored object did not have is new, not "changed". The
condition-guarded families report what the stored object did not already
break (the same error on the stored object is not the update's doing)."""
from __future__ import annotations

from typing import Any

from webhook.blocks.common import same
from webhook.targets import Target
from webhook.field import FieldError, Path, by_rule, forbidden, immutable, invalid
from webhook.paths import FieldPath, get_or_none, item_name, old_indices
from webhook.rules import agreement, guards
from webhook.rules.conditions import holds
from webhook.semantics import Checks, Guarded

Bound = tuple[FieldPath, tuple[int, ...]]      # a config path and the list indices binding its `[*]`


def _at(fp: FieldPath, idx: tuple[int, ...]) -> Path:
    return fp.concrete(idx[:fp.wildcards])


def _value(obj: Any, b: Bound) -> Any:
    return get_or_none(obj, _at(*b))


def _stored(obj: dict, old: dict, b: Bound) -> tuple[bool, Any]:
    """(the item existed in the stored object, the stored value)."""
    fp, idx = b
    old_idx = old_indices(obj, old, fp, idx[:fp.wildcards]) if fp.wildcards else ()
    if old_idx is None:
        return False, None
    return True, get_or_none(old, fp.concrete(old_idx))


def _touched(obj: dict, old: dict | None, *bound: Bound) -> bool:
    """The update set, changed or cleared one of these (a create touches everything)."""
    if old is None:
        return True
    for b in bound:
        existed, before = _stored(obj, old, b)
        if not existed or not same(_value(obj, b), before):
            return True
    return False


def _set(obj: dict, b: Bound) -> bool:
    value = _value(obj, b)
    return value is not None and value != []


def _exclusive(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for ex in checks.exclusive:
        deepest = max((*ex.either, *ex.other), key=lambda p: p.wildcards)
        for idx in deepest.bindings(obj)[0]:
            either = [(p, idx) for p in ex.either if _set(obj, (p, idx))]
            other = [(p, idx) for p in ex.other if _set(obj, (p, idx))]
            if not (either and other and _touched(obj, old, *either, *other)):
                continue
            a, b = ", ".join(str(_at(*x)) for x in either), ", ".join(str(_at(*x)) for x in other)
            if ex.at is not None:
                errors.append(forbidden(_at(ex.at, idx), f"{a} may not be set together with {b}: use one or the other"))
            else:
                errors += [forbidden(_at(*x), f"may not be set together with {a}") for x in other]
    return errors


def _stated(g: Guarded, at: Path, default: FieldError, rule: str) -> FieldError:
    """The operator's words when the entry states them (a mirror), else this service's (rule id)."""
    if g.report is None:
        return by_rule([default], rule)[0]
    return FieldError(g.report.type, at, g.report.value, g.report.message, mirror=g.report.rule)


def _owned(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for g in checks.operatorOwned:
        for idx in g.path.bindings(obj)[0]:
            if _value(obj, (g.path, idx)) is None:
                continue
            bound = [(g.path, idx)]
            if g.when is not None:
                if _value(obj, (g.when, idx)) is None:
                    continue
                bound.append((g.when, idx))      # setting `when` makes an existing value a violation
            if _touched(obj, old, *bound):
                why = f" when {_at(g.when, idx)} is set" if g.when is not None else ""
                at = _at(g.at, idx) if g.at is not None else _at(g.path, idx)
                errors.append(_stated(g, at, forbidden(at, f"is set by the operator{why}; leave it unset"), "TGT-6"))
    return errors


def _references(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for ref in checks.references:
        within = (ref.within, ())
        items = _value(obj, within)
        known = {item_name(i) for i in items} if isinstance(items, list) else set()
        within_touched = _touched(obj, old, within)
        occurrences: dict[str, list[tuple[Path, bool]]] = {}
        for idx in ref.names.bindings(obj)[0]:
            names = _value(obj, (ref.names, idx))
            if not isinstance(names, list):
                continue
            fresh = _touched(obj, old, (ref.names, idx))
            for i, name in enumerate(names):
                if not isinstance(name, str):
                    continue        # a name of the wrong type is the CRD schema's to refuse
                at = _at(ref.names, idx).index(i)
                if name not in known:
                    if fresh or within_touched:         # a rename of the item leaves the name dangling
                        errors.append(invalid(at, name, f"must be the name of an item of {ref.within}"))
                    continue
                occurrences.setdefault(name, []).append((at, fresh))
        if ref.once:
            for name, seen in occurrences.items():
                # A second naming is reported when either naming is new, at each later one.
                if len(seen) > 1 and any(fresh for _, fresh in seen):
                    errors += [invalid(at, name, f"is named more than once (first at {seen[0][0]})") for at, _ in seen[1:]]
        if ref.every and occurrences and isinstance(items, list) and (
                within_touched or any(_touched(obj, old, (ref.names, idx)) for idx in ref.names.bindings(obj)[0])):
            for i, item in enumerate(items):
                if isinstance(item, dict) and item_name(item) not in occurrences:
                    errors.append(invalid(_at(ref.within, ()).index(i).child("name"), item_name(item),
                                          f"must be named by an item of {ref.names} (every item is, once any is)"))
    return errors


def _counts(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for c in checks.counts:
        for idx in c.when.bindings(obj)[0]:
            if _value(obj, (c.when, idx)) is None:
                continue
            value = _value(obj, (c.path, idx))
            n = len(value) if isinstance(value, list) else 0
            if n != c.exactly and _touched(obj, old, (c.path, idx), (c.when, idx)):
                errors.append(invalid(_at(c.path, idx), n, f"must have exactly {c.exactly} item"
                                                          f"{'s' if c.exactly != 1 else ''} when {_at(c.when, idx)} is set"))
    return errors


def _immutable(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    if old is None:
        return []
    errors: list[FieldError] = []
    for g in checks.immutable:
        if g.unless is not None and holds(g.unless, obj, old):
            continue
        for idx in g.path.bindings(obj)[0] if g.path.wildcards else [()]:
            existed, before = _stored(obj, old, (g.path, idx))
            if existed and not same(_value(obj, (g.path, idx)), before):   # a new item is not a change
                errors.append(_stated(g, _at(g.path, idx), immutable(_at(g.path, idx)), "TGT-9"))
    return errors


def _guarded(obj: dict, old: dict | None, c: Checks) -> list[FieldError]:
    """The operators' own condition-guarded rules, and the values that must agree or match."""
    return ([e for a in c.agree for e in agreement.agree(obj, old, a)]
            + [e for r in c.refuse for e in guards.refuse(obj, old, r)]
            + [e for r in c.require for e in guards.require(obj, old, r)]
            + [e for m in c.matched for e in agreement.matched(obj, old, m)])


def _new(obj: dict, old: dict | None, c: Checks, judge) -> list[FieldError]:
    """What `judge` finds that the stored object did not already break (ratcheting)."""
    found = judge(obj, old, c)
    if old is None or not found:
        return found
    before = {e.identity for e in judge(old, None, c)}
    return [e for e in found if e.identity not in before]


def _required_alone(obj: dict, old: dict | None, c: Checks) -> list[FieldError]:
    return [e for r in c.require if r.alone for e in guards.require(obj, old, r)]


def standalone(obj: dict, old: dict | None, target: Target) -> list[FieldError]:
    """Errors after which the operator stops: when any is found, the target reports only these."""
    c = target.checks
    alone = [e for so in c.setOnce for found, stops in [guards.set_once(obj, old, so)] if stops for e in found]
    return _unique(alone + _new(obj, old, c, _required_alone))


def _unique(errors: list[FieldError]) -> list[FieldError]:
    """Identical errors once (as upstream's ErrorList.ToAggregate): two entries reporting at one path."""
    seen: set[tuple] = set()
    out: list[FieldError] = []
    for e in errors:
        if (k := e.identity) not in seen:
            seen.add(k)
            out.append(e)
    return out


def validate(obj: dict, old: dict | None, target: Target) -> list[FieldError]:
    c = target.checks
    return _unique(by_rule(_exclusive(obj, old, c), "TGT-5") + _owned(obj, old, c)
                   + by_rule(_references(obj, old, c), "TGT-7") + by_rule(_counts(obj, old, c), "TGT-8")
                   + _immutable(obj, old, c) + [e for so in c.setOnce for e in guards.set_once(obj, old, so)[0]]
                   + _new(obj, old, c, _guarded))
