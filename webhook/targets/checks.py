"""Object-wide rules a target states (webhook.semantics.Checks): path groups
that exclude each other, fields the operator owns, names that must reference
list items (each at most once), list lengths required by another field, and
fields frozen after create. On update a rule reports only what the update
touched (ratcheting), so an object stored before the rule existed can live on."""
from __future__ import annotations

from typing import Any, Iterator

from webhook.blocks.common import same
from webhook.config import Target
from webhook.errors import FieldError, Path, by_rule, forbidden, immutable, invalid
from webhook.paths import FieldPath, get_or_none
from webhook.semantics import Checks



def _values(obj: Any, fp: FieldPath, idx: tuple[int, ...] | None = None) -> Iterator[tuple[Path, Any, tuple]]:
    """(concrete path, value, indices) of every binding of `fp` (or of one)."""
    bindings = [idx] if idx is not None else fp.bindings(obj)[0]
    for b in bindings:
        path = fp.concrete(b)
        yield path, get_or_none(obj, path), b


def _old(old: dict | None, path: Path) -> Any:
    return get_or_none(old, path) if old is not None else None


def _touched(old: dict | None, paths: list[Path], obj: dict) -> bool:
    return old is None or any(not same(get_or_none(obj, p), _old(old, p)) for p in paths)


def _set(obj: dict, path: Path) -> bool:
    value = get_or_none(obj, path)
    return value is not None and value != []


def _exclusive(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for ex in checks.exclusive:
        deepest = max((*ex.either, *ex.other), key=lambda p: p.wildcards)
        for idx in deepest.bindings(obj)[0]:
            either = [p.concrete(idx) for p in ex.either if _set(obj, p.concrete(idx))]
            other = [p.concrete(idx) for p in ex.other if _set(obj, p.concrete(idx))]
            if not (either and other and _touched(old, either + other, obj)):
                continue
            a, b = ", ".join(str(p) for p in either), ", ".join(str(p) for p in other)
            if ex.at is not None:
                errors.append(forbidden(ex.at.concrete(idx), f"{a} may not be set together with {b}: use one or the other"))
            else:
                errors += [forbidden(p, f"may not be set together with {a}") for p in other]
    return errors


def _owned(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for g in checks.operatorOwned:
        for path, value, idx in _values(obj, g.path):
            if g.when is not None and get_or_none(obj, g.when.concrete(idx)) is None:
                continue
            if value is not None and _touched(old, [path], obj):
                why = f" when {g.when.concrete(idx)} is set" if g.when is not None else ""
                errors.append(forbidden(path, f"is set by the operator{why}; leave it unset"))
    return errors


def _references(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for ref in checks.references:
        items = get_or_none(obj, ref.within.concrete(()))
        known = {_name(i) for i in items} if isinstance(items, list) else set()
        seen: dict[str, Path] = {}
        for path, names, _ in _values(obj, ref.names):
            if not isinstance(names, list):
                continue
            fresh = _touched(old, [path], obj)
            for i, name in enumerate(names):
                at = path.index(i)
                if not isinstance(name, str):
                    continue        # a name of the wrong type is the CRD schema's to refuse
                if name not in known and fresh:
                    errors.append(invalid(at, name, f"must be the name of an item of {ref.within}"))
                elif ref.once and name in seen and fresh:
                    errors.append(invalid(at, name, f"is named more than once (first at {seen[name]})"))
                seen.setdefault(name, at)
        if ref.every and seen and isinstance(items, list) and _touched(old, [ref.within.concrete(())], obj) | \
                any(_touched(old, [p], obj) for p, _, _ in _values(obj, ref.names)):
            for i, item in enumerate(items):
                if isinstance(item, dict) and _name(item) not in seen:
                    errors.append(invalid(ref.within.concrete(()).index(i).child("name"), item.get("name"),
                                          f"must be named by an item of {ref.names} (every item is, once any is)"))
    return errors


def _name(item: Any) -> str | None:
    name = item.get("name") if isinstance(item, dict) else None
    return name if isinstance(name, str) else None


def _counts(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for c in checks.counts:
        for when_path, when, idx in _values(obj, c.when):
            if when is None:
                continue
            path = c.path.concrete(idx)
            value = get_or_none(obj, path)
            n = len(value) if isinstance(value, list) else 0
            if n != c.exactly and _touched(old, [path, when_path], obj):
                errors.append(invalid(path, n, f"must have exactly {c.exactly} item"
                                               f"{'s' if c.exactly != 1 else ''} when {when_path} is set"))
    return errors


def _immutable(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    if old is None:
        return []
    errors: list[FieldError] = []
    for g in checks.immutable:
        if g.unless is not None and get_or_none(obj, g.unless.concrete(())) is True \
                and get_or_none(old, g.unless.concrete(())) is True:
            continue
        paths = {p: None for p, _, _ in (*_values(obj, g.path), *_values(old, g.path))}
        errors += [immutable(p) for p in paths if not same(get_or_none(obj, p), _old(old, p))]
    return errors


def validate(obj: dict, old: dict | None, target: Target) -> list[FieldError]:
    c = target.checks
    return (by_rule(_exclusive(obj, old, c), "TGT-5") + by_rule(_owned(obj, old, c), "TGT-6")
            + by_rule(_references(obj, old, c), "TGT-7") + by_rule(_counts(obj, old, c), "TGT-8")
            + by_rule(_immutable(obj, old, c), "TGT-9"))
