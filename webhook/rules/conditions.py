"""Whether a condition (webhook.semantics.Cond) holds for an object, and which
names of a list of names resolve to list items (first naming wins), as the
operators' webhooks compute them. Nothing here raises on a value of the wrong
JSON type: such a value simply does not satisfy a leaf."""
from __future__ import annotations

from typing import Any

from webhook.paths import FieldPath, get_or_none, item_name
from webhook.semantics import Cond


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not 1, 1 is not "1" (maps and lists compared member by member)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def bound(p: FieldPath, fan: FieldPath | None) -> int:
    """How many of `p`'s `[*]` the rule's fan-out `fan` binds (the lists both walk, in order)."""
    mine, theirs = p.list_prefixes(), fan.list_prefixes() if fan is not None else ()
    n = 0
    while n < min(len(mine), len(theirs)) and mine[n] == theirs[n]:
        n += 1
    return n


def values(obj: Any, p: FieldPath, idx: tuple[int, ...], fan: FieldPath | None) -> list[tuple[tuple[int, ...], Any]]:
    """(binding, value) of `p` for every binding that agrees with the rule's own indices."""
    k = bound(p, fan)
    if k == p.wildcards:            # no `[*]` of its own: one value
        return [(idx[:k], get_or_none(obj, p.concrete(idx[:k])))]
    return [(b, get_or_none(obj, p.concrete(b))) for b in p.bindings(obj)[0] if b[:k] == idx[:k]]


def resolve(obj: Any, names: FieldPath, within: FieldPath) -> dict[tuple[int, ...], list[tuple[int, str]]]:
    """Per binding of the list of names `names`: (position, name) of each name that is the
    `name` of an item of `within` and was not named before (in this list or an earlier one)."""
    items = get_or_none(obj, within.concrete(()))
    known = {item_name(i) for i in items} if isinstance(items, list) else set()
    taken: set[str] = set()
    out: dict[tuple[int, ...], list[tuple[int, str]]] = {}
    for b in names.bindings(obj)[0] if names.wildcards else [()]:
        listed = get_or_none(obj, names.concrete(b))
        out[b] = []
        for j, name in enumerate(listed if isinstance(listed, list) else []):
            if isinstance(name, str) and name in known and name not in taken:
                taken.add(name)
                out[b].append((j, name))
    return out


def _leaf(c: Cond, value: Any) -> bool:
    if c.op == "set":
        return value is not None
    if c.op == "nonEmpty":
        return isinstance(value, (str, list, dict)) and len(value) > 0
    if c.op == "equals":
        return same_json(value, c.arg)
    if c.op == "greaterThan":
        return _number(value) and _number(c.arg) and value > c.arg
    if c.op == "count":
        return (len(value) if isinstance(value, list) else 0) == c.arg
    if c.op == "contains":
        return isinstance(value, list) and any(
            isinstance(item, dict) and all(k in item and same_json(item[k], v) for k, v in c.arg.items()) for item in value)
    raise ValueError(f"unknown condition {c.op!r}")


def holds(c: Cond | None, obj: Any, old: Any, idx: tuple[int, ...] = (), fan: FieldPath | None = None,
          memo: dict | None = None) -> bool:
    """`c` for the object (None holds). `idx` binds the `[*]` of the rule's fan-out `fan`;
    any other `[*]` holds when some item satisfies the leaf. `memo` keeps what `resolves`
    computed for this object, so a rule over many items resolves the names once."""
    if c is None:
        return True
    if c.op in ("allOf", "anyOf", "not"):
        parts = (holds(p, obj, old, idx, fan, memo) for p in c.parts)
        return all(parts) if c.op == "allOf" else any(parts) if c.op == "anyOf" else not next(parts)
    if c.op == "old":          # the stored object, whose items are not bound to the new one's
        return old is not None and holds(c.parts[0], old, None)
    if c.op == "resolves":
        memo = {} if memo is None else memo
        if (c.path, c.arg) not in memo:
            memo[(c.path, c.arg)] = resolve(obj, c.path, c.arg)
        k, resolved = bound(c.path, fan), memo[(c.path, c.arg)]
        found = bool(resolved.get(idx[:k])) if k == c.path.wildcards else \
            any(b[:k] == idx[:k] and named for b, named in resolved.items())
    else:
        found = any(_leaf(c, v) for _, v in values(obj, c.path, idx, fan))
    return found != c.negate
