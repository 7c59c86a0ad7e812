"""A target: one configured CRD entry (`targets[i]` of the config, or what a
profile expands into): where its groups' blocks sit, what they mean
(webhook.semantics), its named conditions and object-wide checks, and the one
parser of an entry."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from webhook.field import FieldError, Path, invalid
from webhook.paths import FieldPath, parse_into, within_fanout
from webhook.semantics import Checks, Cond, Semantics, Size, parse_checks, parse_conditions, parse_semantics, parse_size

BLOCK_KEYS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "resourceClaims")

# A CRD's plural is whatever its author wrote (controller-gen writes an English plural:
# TrainingPolicy -> trainingpolicies), so "lowercase + s" is only trusted where every
# pluralisation agrees; otherwise the plural comes from the cluster, a CRD, or the config.
_DOUBTFUL_ENDINGS = ("s", "x", "z", "ch", "sh", "y", "o", "f", "fe", "um", "i")
_IRREGULAR = ("person", "people", "child", "man", "men", "foot", "feet", "tooth", "teeth", "goose", "geese",
              "mouse", "mice", "louse", "ox", "die", "data", "media", "criteria", "criterion", "phenomena",
              "phenomenon", "sheep", "deer", "moose", "bison", "salmon", "trout", "swine", "cattle", "offspring",
              "craft", "ware", "information", "equipment", "feedback", "traffic", "music", "evidence", "knowledge",
              "research", "advice", "police")


def obvious_plural(kind: str) -> str | None:
    """The lowercase kind + "s", when no pluralisation could say otherwise; None when in doubt:
    the kind's last word ends in an acronym or digit, in s, x, z, ch, sh, y, o, f, fe, um or i,
    or in an irregular or uncountable word (person, child, man, data, sheep, ...)."""
    last = re.search(r"[A-Z]?[a-z]+$", kind)
    word = last.group(0).lower() if last else ""
    if not word or word.endswith(_DOUBTFUL_ENDINGS) or word.endswith(_IRREGULAR):
        return None
    return kind.lower() + "s"


class UnknownResource(ValueError):
    """Targets without a resource name to register; `problems`: one line each."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


def offline_resources(targets) -> dict[str, str]:
    """Kind.group -> resource from the config alone: `plural`, else the obvious plural.
    Raises UnknownResource naming each target that needs `plural` (or a CRD, or the cluster)."""
    out, problems = {}, []
    for t in targets:
        if t.known_resource:
            out[t.key] = t.known_resource
        else:
            problems.append(f"{t.key}: give `plural` (or --crd, or --kubeconfig): the resource name of kind {t.kind} "
                            "cannot be told from the kind (docs/configuration.md#plural)")
    if problems:
        raise UnknownResource(problems)
    return out


def guessed_plural(kind: str) -> str:
    """kube's own last-resort guess (apimachinery's UnsafeGuessKindToResource): for reading
    only, where a wrong name reads as "not served"; never for a registration."""
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


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
    #: The settings the entry writes, as config paths (`groups.size.sum`, `checks.exclusive`):
    #: what the VAP export classifies (webhook.vap.targets).
    written: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def key(self) -> str:
        """Kind and group: how registration and the VAP export name a target."""
        return f"{self.kind}.{self.group}"

    @property
    def known_resource(self) -> str | None:
        """The resource name as the config alone tells it: `plural`, else the obvious plural;
        None when only the cluster (discovery) or the CRD can tell."""
        return self.plural or obvious_plural(self.kind)

    @property
    def resource(self) -> str:
        """A name to read with (audit, explain): `known_resource`, else kube's guess. Webhook
        rules never use it: they take the resolved name (webhook.registration)."""
        return self.known_resource or guessed_plural(self.kind)

    @property
    def mutates(self) -> bool:
        """Whether /mutate can change its objects (DEF-1): a composite, or a group that defaults
        `minCount`. Only those are sent to the mutating webhook, whose failure policy is Fail."""
        return self.composite is not None or any(
            g.semantics.defaultMinCount and g.semantics.minCount != "unset" for g in self.groups)

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
                  profile=t.get("profile"), written=written_settings(t))


def written_settings(t: dict) -> frozenset[str]:
    """`groups.size.path`, `composite.children`, ...: every setting an entry writes, one level
    into its groups, composite, checks and the object form of a group's size."""
    out = set()
    for k, v in t.items():
        if k == "groups":
            for g in v or []:
                for gk, gv in g.items():
                    out.add(f"groups.{gk}")
                    if gk == "size" and isinstance(gv, dict):
                        out.update(f"groups.size.{sk}" for sk in gv)
        elif k in ("composite", "checks") and isinstance(v, dict) and v:
            out.update(f"{k}.{sub}" for sub in v)
        else:
            out.add(k)
    return frozenset(out)
