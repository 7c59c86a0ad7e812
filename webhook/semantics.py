"""What a target's groups mean, as the config states it (issue: real adopters).

A leaf group's blocks are the same everywhere; what differs between the
operators that embed them is data: what bounds `gang.minCount` (a field, or a
sum of products over a list), how (≤, =, must not be set), which policy an
unset `schedulingPolicy` resolves to, whether `minCount` is required (PodGroup
object types) or optional (building blocks), whether the field holding the
blocks may appear or vanish after create. Object-wide rules sit in `Checks`;
conditions (`Cond`: "this field is set", "the stored object's list has an item
like this", all/any/not) guard them and the group semantics alike.
Parsing only: the rules that read these live in webhook.rules."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhook.field import OMIT, FieldError, Path, invalid
from webhook.paths import FieldPath, parse_into as _path


@dataclass(frozen=True)
class Cond:
    """A condition on the object. Leaves test the value at `path`: `set` (not null; `{}` and
    `""` are set), `nonEmpty` (a non-empty string, list or map), `equals` (JSON equality),
    `greaterThan` (a number), `count` (a list of exactly N items; absent is 0), `contains`
    (a list with an item whose fields equal `arg`'s), `resolves` (a list of names of which one
    is the name of an item of the list `arg` that no earlier list of the fan-out named first).
    `negate` inverts a leaf. `allOf`/`anyOf`/`not` combine `parts`; `old` tests the stored object
    (false on create). A `[*]` the rule's own fan-out does not bind means "any item"."""
    op: str
    path: FieldPath | None = None
    arg: Any = None
    parts: tuple["Cond", ...] = ()
    negate: bool = False


_LEAVES = ("set", "nonEmpty", "equals", "greaterThan", "count", "contains", "resolves")


def parse_condition(raw: Any, where: Path, errors: list[FieldError], named: dict[str, Cond] | None = None) -> Cond | None:
    """A condition as written (already shape-checked by the config schema): a path is `{path, set: true}`."""
    named = named or {}
    if isinstance(raw, str):
        p = _path(raw, where, errors)
        return Cond("set", p) if p else None
    if "ref" in raw:
        if raw["ref"] not in named:
            errors.append(invalid(where.child("ref"), raw["ref"], f"is not a condition defined before it ({sorted(named)})"))
        return named.get(raw["ref"])
    for op in ("allOf", "anyOf"):
        if op in raw:
            parts = [parse_condition(r, where.child(op, i), errors, named) for i, r in enumerate(raw[op])]
            return Cond(op, parts=tuple(parts)) if None not in parts else None
    for op in ("not", "old"):
        if op in raw:
            inner = parse_condition(raw[op], where.child(op), errors, named)
            return Cond(op, parts=(inner,)) if inner else None
    p = _path(raw["path"], where.child("path"), errors)
    op = next(k for k in _LEAVES if k in raw)
    arg = raw[op]
    if op == "resolves":
        arg = _path(arg, where.child(op), errors)
        if arg is not None and arg.wildcards:
            errors.append(invalid(where.child(op), str(arg), "names the list itself: no `[*]`"))
            return None
    if p is None or arg is None and op == "resolves":
        return None
    if op in ("set", "nonEmpty"):
        return Cond(op, p, negate=not arg)
    return Cond(op, p, arg)


def parse_conditions(raw: dict, where: Path, errors: list[FieldError]) -> dict[str, Cond]:
    """A target's named conditions; each may use the ones defined before it (`{ref: name}`)."""
    named: dict[str, Cond] = {}
    for name, c in (raw or {}).items():
        parsed = parse_condition(c, where.key(name), errors, named)
        if parsed is not None:
            named[name] = parsed
    return named


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
    boundUnless: Cond | None = None        # POL-3 does not apply while this holds (JobSet: sequenced startup)


@dataclass(frozen=True)
class Exclusive:
    """`either` and `or` paths must not both be set (an empty list counts as
    unset); reported at `at` when given, else at each `or` path that is set."""
    either: tuple[FieldPath, ...]
    other: tuple[FieldPath, ...]
    at: FieldPath | None = None


@dataclass(frozen=True)
class OperatorWording:
    """How a check states the operator's own rule: its error type, a fixed bad value
    (OMIT: the check's own), and its text. A check with a OperatorWording is a mirror of that
    operator: its errors carry the text unchanged and no rule id (they always deny);
    `rule` is the catalogue's id of the operator's rule (JS-n, LWS-n: metrics and logs)."""
    type: str
    message: str
    value: Any = OMIT
    rule: str | None = None


@dataclass(frozen=True)
class Guarded:
    """A path with a condition: `when` must be set for the rule to apply (operatorOwned),
    or `unless` holding lifts it (immutable; a path: true in both old and new object).
    `at`: where the error is reported (once, however many paths break it)."""
    path: FieldPath
    when: FieldPath | None = None
    unless: Cond | None = None
    at: FieldPath | None = None
    report: OperatorWording | None = None


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
class Agree:
    """All values agree with the first (`default` for an unset one): the values at `paths`
    (every item of their `[*]`, in order), or, per binding of `names`, field `field` of the
    items of `within` those names resolve to (first naming wins; `index: resolved` reports a
    name at its position among the resolved ones, as JobSet does). With `at`: one error there."""
    report: OperatorWording
    paths: tuple[FieldPath, ...] = ()
    names: FieldPath | None = None
    within: FieldPath | None = None
    field: Path | None = None
    default: Any = None
    when: Cond | None = None
    at: FieldPath | None = None
    index: str = "written"


@dataclass(frozen=True)
class Refuse:
    """`path` must not be set while `when` holds (bound by `path`'s fan-out)."""
    path: FieldPath
    report: OperatorWording
    when: Cond | None = None


@dataclass(frozen=True)
class Require:
    """While `when` holds, `need` must hold; else the error is at `at`. `alone`: the
    operator stops there, so the target reports this error and nothing else."""
    at: FieldPath
    need: Cond
    report: OperatorWording
    when: Cond | None = None
    alone: bool = False


@dataclass(frozen=True)
class MatchIn:
    list: FieldPath
    message: str
    when: Cond | None = None


@dataclass(frozen=True)
class Matched:
    """Each item of `items` has an item with the same `keys` (absent is not "") in every
    list of `lists` whose `when` holds; the error is at the item, its value the item's `show`."""
    items: FieldPath
    keys: tuple[str, ...]
    lists: tuple[MatchIn, ...]
    type: str = "Invalid"
    show: str | None = None
    rule: str | None = None


@dataclass(frozen=True)
class SetOnce:
    """On update `path` may not appear (`added`) or vanish (`removed`); `alone`: in those
    directions the operator reports this error and nothing else."""
    path: FieldPath
    type: str
    added: str
    removed: str
    alone: tuple[str, ...] = ()
    rule: str | None = None


@dataclass(frozen=True)
class Checks:
    """Object-wide rules of a target."""
    exclusive: tuple[Exclusive, ...] = ()
    operatorOwned: tuple[Guarded, ...] = ()
    references: tuple[Reference, ...] = ()
    counts: tuple[Count, ...] = ()
    immutable: tuple[Guarded, ...] = ()
    agree: tuple[Agree, ...] = ()
    refuse: tuple[Refuse, ...] = ()
    require: tuple[Require, ...] = ()
    matched: tuple[Matched, ...] = ()
    setOnce: tuple[SetOnce, ...] = ()

    def __bool__(self) -> bool:
        return any(getattr(self, f) for f in self.__dataclass_fields__)


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


def parse_semantics(raw: dict, where: Path, errors: list[FieldError], named: dict[str, Cond] | None = None) -> Semantics:
    once = _path(raw["setOnce"], where.child("setOnce"), errors) if raw.get("setOnce") else None
    unbound = parse_condition(raw["boundUnless"], where.child("boundUnless"), errors, named) \
        if raw.get("boundUnless") is not None else None
    return Semantics(minCount=raw.get("minCount", "atMostSize"), defaultPolicy=raw.get("defaultPolicy", "basic"),
                     minCountRequired=raw.get("minCountRequired", False),
                     defaultMinCount=raw.get("defaultMinCount", True), setOnce=once, maxGroups=raw.get("maxGroups"),
                     frozenBlocks=raw.get("frozenBlocks", True),
                     nonPositiveMinCountIsUnset=raw.get("nonPositiveMinCountIsUnset", False),
                     gangIncompatible=tuple((p, c["equals"]) for i, c in enumerate(raw.get("gangIncompatible") or [])
                                            if (p := _path(c["path"], where.child("gangIncompatible", i, "path"), errors))),
                     boundUnless=unbound)


def _report(e: dict, default_type: str) -> OperatorWording:
    return OperatorWording(e.get("type", default_type), e["message"], e["value"] if "value" in e else OMIT, e.get("rule"))


def _opt(e: dict, key: str, where: Path, errors: list[FieldError], named: dict, cond: bool = False) -> Any:
    """An optional path (or condition) of entry `e`; False when it is given but broken."""
    if e.get(key) is None:
        return None
    parsed = (parse_condition(e[key], where.child(key), errors, named) if cond else _path(e[key], where.child(key), errors))
    return False if parsed is None else parsed


def _entries(raw: dict, key: str, where: Path, errors: list[FieldError], build) -> tuple:
    out = []
    for i, e in enumerate(raw.get(key) or []):
        before = len(errors)
        item = build(e, where.child(key, i))
        if len(errors) == before and item is not None:
            out.append(item)
    return tuple(out)


def parse_checks(raw: dict, where: Path, errors: list[FieldError], named: dict[str, Cond] | None = None) -> Checks:
    named = named or {}
    opt = lambda e, k, at, cond=False: _opt(e, k, at, errors, named, cond)     # noqa: E731
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

    def agree(e: dict, at: Path) -> Agree:
        rel = _path(e["field"], at.child("field"), errors) if e.get("field") else None
        if rel is not None and rel.wildcards:
            errors.append(invalid(at.child("field"), e["field"], "a field of each named item: no `[*]`"))
            return None
        return Agree(_report(e, "Invalid"), _paths(e.get("paths") or [], at.child("paths"), errors),
                     opt(e, "names", at), opt(e, "within", at), rel.concrete(()) if rel else None,
                     e.get("default"), opt(e, "when", at, True), opt(e, "at", at), e.get("index", "written"))

    def matched(e: dict, at: Path) -> Matched:
        lists = tuple(MatchIn(_path(m["list"], at.child("in", j, "list"), errors), m["message"],
                              opt(m, "when", at.child("in", j), True)) for j, m in enumerate(e["in"]))
        return Matched(_path(e["items"], at.child("items"), errors), tuple(e["keys"]), lists,
                       e.get("type", "Invalid"), e.get("show"), e.get("rule"))

    checks = Checks(exclusive=exclusive,
                    operatorOwned=_guarded(raw.get("operatorOwned") or [], where.child("operatorOwned"), errors, named, "Forbidden"),
                    references=tuple(refs), counts=tuple(counts),
                    immutable=_guarded(raw.get("immutable") or [], where.child("immutable"), errors, named, "Invalid"),
                    agree=_entries(raw, "agree", where, errors, agree),
                    refuse=_entries(raw, "refuse", where, errors, lambda e, at: Refuse(
                        _path(e["path"], at.child("path"), errors), _report(e, "Forbidden"), opt(e, "when", at, True))),
                    require=_entries(raw, "require", where, errors, lambda e, at: Require(
                        _path(e["at"], at.child("at"), errors), parse_condition(e["need"], at.child("need"), errors, named),
                        _report(e, "Invalid"), opt(e, "when", at, True), e.get("alone", False))),
                    matched=_entries(raw, "matched", where, errors, matched),
                    setOnce=_entries(raw, "setOnce", where, errors, lambda e, at: SetOnce(
                        _path(e["path"], at.child("path"), errors), e.get("type", "Invalid"), e["added"], e["removed"],
                        tuple(e.get("alone") or ()), e.get("rule"))))
    return checks


def _guarded(raw: list, where: Path, errors: list[FieldError], named: dict[str, Cond], kind: str) -> tuple[Guarded, ...]:
    """operatorOwned (`kind` Forbidden) or immutable (Invalid) entries."""
    out = []
    for i, entry in enumerate(raw):
        entry = {"path": entry} if isinstance(entry, str) else entry
        at = where.index(i)
        before = len(errors)
        p = _path(entry["path"], at if isinstance(raw[i], str) else at.child("path"), errors)
        kw = {k: _path(entry[k], at.child(k), errors) for k in ("when", "at") if entry.get(k)}
        unless = entry.get("unless")
        if isinstance(unless, str):          # a boolean field true in the old and the new object
            u = _path(unless, at.child("unless"), errors)
            if u is not None and u.wildcards:
                errors.append(invalid(at.child("unless"), unless, "a field of the object: no `[*]`"))
            kw["unless"] = Cond("allOf", parts=(Cond("equals", u, True), Cond("old", parts=(Cond("equals", u, True),))))
        elif unless is not None:
            kw["unless"] = parse_condition(unless, at.child("unless"), errors, named)
        if "message" in entry:
            kw["report"] = _report(entry, kind)
        if p is not None and len(errors) == before:
            out.append(Guarded(p, **kw))
    return tuple(out)
