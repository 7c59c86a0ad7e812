"""Object-wide rules a target states (webhook.semantics.Checks): path groups
that exclude each other, fields the operator owns, names that must reference
list items (each at most once), list lengths required by another field, and
fields frozen after create. On update a rule reports only what the update
touched (ratcheting), so an object stored before the rule existed can live on."""
from __future__ import annotations

from typing import Any, Iterator

from webhook.blocks.common import same
from webhook.config import Target
from webhook.errors import FieldError, Path, duplicate, forbidden, immutable, invalid
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


def _exclusive(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for ex in checks.exclusive:
        deepest = max((*ex.either, *ex.other), key=lambda p: p.wildcards)
        for idx in deepest.bindings(obj)[0]:
            either = [p.concrete(idx) for p in ex.either if get_or_none(obj, p.concrete(idx)) is not None]
            other = [p.concrete(idx) for p in ex.other if get_or_none(obj, p.concrete(idx)) is not None]
            if either and other and _touched(old, either + other, obj):
                names = ", ".join(str(p) for p in either)
                errors += [forbidden(p, f"may not be set together with {names}") for p in other]
    return errors


def _owned(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    return [forbidden(path, "is set by the operator; leave it unset")
            for fp in checks.operatorOwned for path, value, _ in _values(obj, fp)
            if value is not None and _touched(old, [path], obj)]


def _references(obj: dict, old: dict | None, checks: Checks) -> list[FieldError]:
    errors: list[FieldError] = []
    for ref in checks.references:
        items = get_or_none(obj, ref.within.concrete(()))
        known = {i.get("name") for i in items if isinstance(i, dict)} if isinstance(items, list) else set()
        seen: dict[str, Path] = {}
        for path, names, _ in _values(obj, ref.names):
            if not isinstance(names, list):
                continue
            fresh = _touched(old, [path], obj)
            for i, name in enumerate(names):
                at = path.index(i)
                if name not in known and fresh:
                    errors.append(FieldError("NotFound", at, name,
                                             f"must be the name of an item of {ref.within}"))
                elif ref.once and name in seen and fresh:
                    errors.append(duplicate(at, name))
                seen.setdefault(name, at)
    return errors


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
    return [immutable(path) for fp in checks.immutable for path, value, _ in _values(obj, fp)
            if not same(value, _old(old, path))] + \
        [immutable(path) for fp in checks.immutable for path, value, _ in _values(old, fp)
         if get_or_none(obj, path) is None and value is not None]


def validate(obj: dict, old: dict | None, target: Target) -> list[FieldError]:
    c = target.checks
    return _exclusive(obj, old, c) + _owned(obj, old, c) + _references(obj, old, c) + _counts(obj, old, c) \
        + _immutable(obj, old, c)
