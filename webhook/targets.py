"""A target: one configured CRD entry (`targets[i]` of the config, or what a
profile expands into): where its groups' blocks sit, what they mean
(webhook.semantics), its named conditions and object-wide checks, and the one
parser of an entry."""
from __future__ import annotations

from dataclasses import dataclass, field

from webhook.field import FieldError, Path, invalid
from webhook.paths import FieldPath, parse_into, within_fanout
from webhook.semantics import Checks, Cond, Semantics, Size, parse_checks, parse_conditions, parse_semantics, parse_size

BLOCK_KEYS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "resourceClaims")


@dataclass(frozen=True)
class LeafGroup:
    """Where one leaf pod group's blocks sit inside a target object."""
    schedulingPolicy: FieldPath | None = None
    schedulingConstraints: FieldPath | None = None
    disruptionMode: FieldPath | None = None
    resourceClaims: FieldPath | None = None
    size: Size | None = None
    semantics: Semantics = field(default_factory=Semantics)

    def paths(self) -> dict[str, FieldPath]:
        """The block paths and the size paths that fan out with the group."""
        out = {k: v for k in BLOCK_KEYS if (v := getattr(self, k)) is not None}
        for i, p in enumerate(self.size.fan_paths() if self.size else ()):
            out["size" if i == 0 and self.size.path else "size.only"] = p
        return out


@dataclass(frozen=True)
class CompositeGroup:
    schedulingPolicy: FieldPath
    children: FieldPath
    schedulingConstraints: FieldPath | None = None
    disruptionMode: FieldPath | None = None


@dataclass(frozen=True)
class Target:
    group: str
    kind: str
    versions: tuple[str, ...] = ()
    plural: str | None = None
    groups: tuple[LeafGroup, ...] = ()
    composite: CompositeGroup | None = None
    checks: Checks = field(default_factory=Checks)
    profile: str | None = None          # the shipped profile this target came from

    @property
    def resource(self) -> str:
        """The resource name webhook rules use: `plural`, else the lowercase kind + "s"."""
        return self.plural or self.kind.lower() + "s"

    def matches(self, group: str, version: str, kind: str) -> bool:
        return group == self.group and kind == self.kind and (not self.versions or version in self.versions)


def _check_fanout(paths: dict[str, FieldPath], where: Path, errors: list[FieldError]) -> None:
    """All `[*]` of one group must walk the same lists, so index i means the same item everywhere."""
    deepest = max(paths.values(), key=lambda p: p.wildcards, default=None)
    if deepest is None:
        return
    for name, p in paths.items():
        if p.wildcards != deepest.wildcards:
            errors.append(invalid(where.child(name), str(p), f"must fan out like {deepest} (`[*]` {deepest.wildcards} "
                                  "time(s)): a block outside the list would be judged once per item, or never"))
        elif p.list_prefixes() != deepest.list_prefixes():
            errors.append(invalid(where.child(name), str(p),
                                  f"its `[*]` lists must be a prefix of those of {deepest} (same items, same order)"))


def _check_checks(c: Checks, where: Path, errors: list[FieldError]) -> None:
    """Every path of one rule is bound by the same list indices (the rule's deepest path).
    A condition's `[*]` that the rule does not bind means "any item", so it needs no check."""
    def need(p: FieldPath | None, outer: FieldPath, at: Path) -> None:
        if p is not None and not within_fanout(p, outer):
            errors.append(invalid(at, str(p), f"its `[*]` lists must be a prefix of those of {outer}"))

    def whole(p: FieldPath | None, at: Path, what: str) -> None:
        if p is not None and p.wildcards:
            errors.append(invalid(at, str(p), f"{what}: no `[*]`"))
    for i, ex in enumerate(c.exclusive):
        paths = [*ex.either, *ex.other]
        deepest = max(paths, key=lambda p: p.wildcards)
        for p in paths + ([ex.at] if ex.at else []):
            need(p, deepest, where.child("exclusive", i))
    for i, g in enumerate(c.operatorOwned):
        need(g.when, g.path, where.child("operatorOwned", i, "when"))
        need(g.at, g.path, where.child("operatorOwned", i, "at"))
    for i, r in enumerate(c.references):
        whole(r.within, where.child("references", i, "within"), "names the list itself")
    for i, cnt in enumerate(c.counts):
        need(cnt.when, cnt.path, where.child("counts", i, "when"))
        need(cnt.path, cnt.when, where.child("counts", i, "path"))
    for i, a in enumerate(c.agree):
        at = where.child("agree", i)
        if bool(a.paths) == (a.names is not None) or (a.names is None) != (a.within is None) \
                or (a.names is None) != (a.field is None):
            errors.append(invalid(at, "", "give either `paths`, or `names`, `within` and `field`"))
        whole(a.within, at.child("within"), "names the list itself")
        whole(a.at, at.child("at"), "reported once")
    for i, m in enumerate(c.matched):
        for j, lst in enumerate(m.lists):
            need(lst.list, m.items, where.child("matched", i, "in", j, "list"))
    for i, so in enumerate(c.setOnce):
        whole(so.path, where.child("setOnce", i, "path"), "one field of the object")


def _leaf_group(g: dict, where: Path, errors: list[FieldError], named: dict[str, Cond]) -> LeafGroup | None:
    """`at: X` places the four blocks at X.schedulingPolicy, X.schedulingConstraints, ..."""
    raw = {k: g.get(k) or (f"{g['at']}.{k}" if g.get("at") else None) for k in BLOCK_KEYS}
    before = len(errors)
    if not any(raw.values()):
        errors.append(invalid(where, "", "a group needs at least one block path (or `at`)"))
        return None
    parsed = {k: parse_into(v, where.child(k if g.get(k) else "at"), errors) for k, v in raw.items() if v}
    size = parse_size(g["size"], where.child("size"), errors) if g.get("size") is not None else None
    semantics = parse_semantics(g, where, errors, named)
    if len(errors) > before:
        return None
    group = LeafGroup(**parsed, size=size, semantics=semantics)
    deepest = max(group.paths().values(), key=lambda p: p.wildcards)
    extra = [("setOnce", semantics.setOnce)] + [(f"gangIncompatible[{i}].path", p)
                                                 for i, (p, _) in enumerate(semantics.gangIncompatible)]
    for name, p in extra:
        if p is not None and not within_fanout(p, deepest):
            errors.append(invalid(where.child(name), str(p), f"its `[*]` lists must be a prefix of those of {deepest}"))
    return None if len(errors) > before else group


def parse_target(t: dict, tpath: Path, errors: list[FieldError]) -> Target:
    """One `targets[i]` entry (already shape-checked by the config schema); problems go to `errors`."""
    named = parse_conditions(t.get("conditions") or {}, tpath.child("conditions"), errors)
    groups = []
    for gi, g in enumerate(t.get("groups") or []):
        gpath = tpath.child("groups", gi)
        group = _leaf_group(g, gpath, errors, named)
        if group is not None:
            _check_fanout(group.paths(), gpath, errors)
            groups.append(group)
    composite = None
    if t.get("composite"):
        cpath = tpath.child("composite")
        parsed = {k: parse_into(v, cpath.child(k), errors) for k, v in t["composite"].items()}
        if all(v is not None for v in parsed.values()):
            for name, p in parsed.items():
                if p.wildcards:
                    errors.append(invalid(cpath.child(name), str(p), "a composite block is one per object: `[*]` is not allowed"))
            composite = CompositeGroup(**parsed)
    checks = parse_checks(t.get("checks") or {}, tpath.child("checks"), errors, named)
    _check_checks(checks, tpath.child("checks"), errors)
    return Target(group=t["group"], kind=t["kind"], versions=tuple(t.get("versions") or ()),
                  plural=t.get("plural"), groups=tuple(groups), composite=composite, checks=checks,
                  profile=t.get("profile"))
