"""What a target's groups mean, as the config states it (issue: real adopters).

A leaf group's blocks are the same everywhere; what differs between the
operators that embed them is data: what bounds `gang.minCount` (a field, or a
sum of products over a list), how (≤, =, must not be set), which policy an
unset `schedulingPolicy` resolves to, whether `minCount` is required (PodGroup
object types) or optional (building blocks), whether the field holding the
blocks may appear or vanish after create. Object-wide rules sit in `Checks`.
Parsing only: the rules that read these live in webhook.rules."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhook.errors import FieldError, Path, invalid
from webhook.paths import FieldPath, parse_into as _path, within_fanout



@dataclass(frozen=True)
class Size:
    """How many pods a group has. Either the count at `path` (`default` when it
    is unset), or Σ over the items of the list `sum` of the product of
    `factors` (fields of each item, `defaults` when unset), counting only the
    items whose `name` the list at `only` names (when `only` is given)."""
    path: FieldPath | None = None
    default: int | None = None
    sum: FieldPath | None = None
    factors: tuple[tuple[str, Path], ...] = ()          # (as written, parsed relative path)
    defaults: tuple[tuple[str, int], ...] = ()
    only: FieldPath | None = None

    def fan_paths(self) -> list[FieldPath]:
        """The paths that fan out with the group (so index i means the same item)."""
        return [p for p in (self.path, self.only) if p is not None]

    def describe(self) -> str:
        if self.path is not None:
            return str(self.path)
        product = " × ".join(name for name, _ in self.factors)
        scope = f" over the items {self.only} names" if self.only else ""
        return f"Σ {product} of {self.sum}[*]{scope}"


@dataclass(frozen=True)
class Semantics:
    """Per leaf group. The defaults are the original building-block embedding."""
    minCount: str = "atMostSize"
    defaultPolicy: str = "basic"
    minCountRequired: bool = False         # PodGroup object types: `gang.minCount` is required
    defaultMinCount: bool = True           # the mutating webhook sets an unset minCount to the size
    setOnce: FieldPath | None = None       # the field holding the blocks cannot be added or removed on update
    frozenBlocks: bool = True              # on update a changed block is refused (else: judged as on create)
    nonPositiveMinCountIsUnset: bool = False   # JobSet: minCount <= 0 means "the controller computes it"
    gangIncompatible: tuple[tuple[FieldPath, Any], ...] = ()   # (path, value): a gang is refused while it holds
    maxGroups: int | None = None           # at most this many instances (pod group templates) per object


@dataclass(frozen=True)
class Exclusive:
    """`either` and `or` paths must not both be set (an empty list counts as
    unset); reported at `at` when given, else at each `or` path that is set."""
    either: tuple[FieldPath, ...]
    other: tuple[FieldPath, ...]
    at: FieldPath | None = None


@dataclass(frozen=True)
class Guarded:
    """A path with a condition: `when` must be set for the rule to apply (operatorOwned),
    or `unless` true in both old and new object lifts it (immutable)."""
    path: FieldPath
    when: FieldPath | None = None
    unless: FieldPath | None = None


@dataclass(frozen=True)
class Reference:
    """Each name in `names` must be the `name` of an item of `within`, and
    (with `once`) no item may be named twice across the whole object."""
    names: FieldPath
    within: FieldPath
    once: bool = True
    every: bool = False        # when any name is given, every item of `within` must be named


@dataclass(frozen=True)
class Count:
    """The list at `path` must have exactly `exactly` items whenever `when` is set
    (same fan-out)."""
    path: FieldPath
    exactly: int
    when: FieldPath


@dataclass(frozen=True)
class Checks:
    """Object-wide rules of a target."""
    exclusive: tuple[Exclusive, ...] = ()
    operatorOwned: tuple[Guarded, ...] = ()
    references: tuple[Reference, ...] = ()
    counts: tuple[Count, ...] = ()
    immutable: tuple[Guarded, ...] = ()

    def __bool__(self) -> bool:
        return any((self.exclusive, self.operatorOwned, self.references, self.counts, self.immutable))


def _paths(raw: list, where: Path, errors: list[FieldError]) -> tuple[FieldPath, ...]:
    return tuple(p for i, r in enumerate(raw) if (p := _path(r, where.index(i), errors)) is not None)


def parse_size(raw: Any, where: Path, errors: list[FieldError]) -> Size | None:
    if isinstance(raw, str):
        p = _path(raw, where, errors)
        return Size(path=p) if p else None
    if "path" in raw:
        p = _path(raw["path"], where.child("path"), errors)
        return Size(path=p, default=raw.get("default")) if p else None
    total = _path(raw["sum"], where.child("sum"), errors)
    if total is not None and total.wildcards:
        errors.append(invalid(where.child("sum"), raw["sum"], "names the list itself: no `[*]`"))
    factors = []
    for i, f in enumerate(raw["product"]):
        fp = _path(f, where.child("product").index(i), errors)
        if fp is not None and fp.wildcards:
            errors.append(invalid(where.child("product").index(i), f, "a field of each item: no `[*]`"))
        elif fp is not None:
            factors.append((f, fp.concrete(())))
    only = _path(raw["only"], where.child("only"), errors) if raw.get("only") else None
    defaults = tuple(sorted((raw.get("defaults") or {}).items()))
    for name, _ in defaults:
        if name not in raw["product"]:
            errors.append(invalid(where.child("defaults").key(name), name, "is not one of `product`"))
    return Size(sum=total, factors=tuple(factors), defaults=defaults, only=only)


def parse_semantics(raw: dict, where: Path, errors: list[FieldError]) -> Semantics:
    once = _path(raw["setOnce"], where.child("setOnce"), errors) if raw.get("setOnce") else None
    return Semantics(minCount=raw.get("minCount", "atMostSize"), defaultPolicy=raw.get("defaultPolicy", "basic"),
                     minCountRequired=raw.get("minCountRequired", False),
                     defaultMinCount=raw.get("defaultMinCount", True), setOnce=once, maxGroups=raw.get("maxGroups"),
                     frozenBlocks=raw.get("frozenBlocks", True),
                     nonPositiveMinCountIsUnset=raw.get("nonPositiveMinCountIsUnset", False),
                     gangIncompatible=tuple((p, c["equals"]) for i, c in enumerate(raw.get("gangIncompatible") or [])
                                            if (p := _path(c["path"], where.child("gangIncompatible", i, "path"), errors))))


def parse_checks(raw: dict, where: Path, errors: list[FieldError]) -> Checks:
    exclusive = tuple(Exclusive(_paths(e["either"], where.child("exclusive", i, "either"), errors),
                                _paths(e["or"], where.child("exclusive", i, "or"), errors),
                                _path(e["at"], where.child("exclusive", i, "at"), errors) if e.get("at") else None)
                      for i, e in enumerate(raw.get("exclusive") or []))
    refs = []
    for i, r in enumerate(raw.get("references") or []):
        names = _path(r["names"], where.child("references", i, "names"), errors)
        within = _path(r["within"], where.child("references", i, "within"), errors)
        if names and within:
            refs.append(Reference(names, within, r.get("once", True), r.get("every", False)))
    counts = []
    for i, c in enumerate(raw.get("counts") or []):
        p = _path(c["path"], where.child("counts", i, "path"), errors)
        w = _path(c["when"], where.child("counts", i, "when"), errors)
        if p and w:
            counts.append(Count(p, c["exactly"], w))
    checks = Checks(exclusive=exclusive,
                    operatorOwned=_guarded(raw.get("operatorOwned") or [], where.child("operatorOwned"), errors),
                    references=tuple(refs), counts=tuple(counts),
                    immutable=_guarded(raw.get("immutable") or [], where.child("immutable"), errors))
    _check_fanouts(checks, where, errors)
    return checks


def _check_fanouts(c: Checks, where: Path, errors: list[FieldError]) -> None:
    """Every path of one rule is bound by the same list indices (the rule's deepest path)."""
    def need(p: FieldPath | None, outer: FieldPath, at: Path) -> None:
        if p is not None and not within_fanout(p, outer):
            errors.append(invalid(at, str(p), f"its `[*]` lists must be a prefix of those of {outer}"))
    for i, ex in enumerate(c.exclusive):
        paths = [*ex.either, *ex.other]
        deepest = max(paths, key=lambda p: p.wildcards)
        for p in paths + ([ex.at] if ex.at else []):
            need(p, deepest, where.child("exclusive", i))
    for i, g in enumerate(c.operatorOwned):
        need(g.when, g.path, where.child("operatorOwned", i, "when"))
    for i, g in enumerate(c.immutable):
        if g.unless is not None and g.unless.wildcards:
            errors.append(invalid(where.child("immutable", i, "unless"), str(g.unless), "a field of the object: no `[*]`"))
    for i, r in enumerate(c.references):
        if r.within.wildcards:
            errors.append(invalid(where.child("references", i, "within"), str(r.within), "names the list itself: no `[*]`"))
    for i, cnt in enumerate(c.counts):
        need(cnt.when, cnt.path, where.child("counts", i, "when"))
        need(cnt.path, cnt.when, where.child("counts", i, "path"))


def _guarded(raw: list, where: Path, errors: list[FieldError]) -> tuple[Guarded, ...]:
    out = []
    for i, entry in enumerate(raw):
        entry = {"path": entry} if isinstance(entry, str) else entry
        at = where.index(i)
        p = _path(entry["path"], at if isinstance(raw[i], str) else at.child("path"), errors)
        cond = {k: _path(entry[k], at.child(k), errors) for k in ("when", "unless") if entry.get(k)}
        if p is not None and None not in cond.values():
            out.append(Guarded(p, **cond))
    return tuple(out)

