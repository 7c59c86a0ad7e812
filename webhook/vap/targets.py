"""Configured targets as ValidatingAdmissionPolicies (CEL in kube-apiserver),
for the rules CEL can state; the rest stays the webhook's and is listed.

Expressible here: a leaf group whose block paths do not fan out (`[*]`) and
whose size is a field (with its default) — the TrainJob / LWS shape. Its
rules: POL-1/2 (+ limits.maxMinCount), POL-3 (<= or =), DIS-1, DIS-2 (with
the group's default policy), CON-1, CLM-1, and on update the frozen blocks,
the frozen policy variant and the set-once holder, all ratcheting like the
webhook (a create-time rule fires on UPDATE only when its inputs changed).
One policy per target and enforcement action (a binding carries one action
for all its validations); messages name the user's field path."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

from webhook.config import Config
from webhook.targets import LeafGroup, Target, offline_resources
from webhook.vap.expressible import reasons as _reasons
from webhook.enforcement import RANK
from webhook.paths import FieldPath

ACTIONS = {"deny": "Deny", "warn": "Warn", "audit": "Audit"}
QUALIFIED, LABEL, SUBDOMAIN = "format.qualifiedName()", "format.dns1123Label()", "format.dns1123Subdomain()"


@dataclass
class Export:
    objects: list[dict] = field(default_factory=list)
    left: list[str] = field(default_factory=list)        # "Kind: what stays the webhook's, and why"
    expressible: set[str] = field(default_factory=set)   # kinds fully judged by the policies


def _q(text: str) -> str:
    return json.dumps(text)          # a CEL string literal (JSON escaping is valid CEL)


class _P:
    """One config path in CEL: presence (every level) and access, new or old object."""

    def __init__(self, fp: FieldPath, root: str = "object"):
        self.names = [n for n, _ in fp.segments]
        self.root = root
        self.text = str(fp)

    def old(self) -> "_P":
        p = _P.__new__(_P)
        p.names, p.root, p.text = self.names, "oldObject", self.text
        return p

    @property
    def expr(self) -> str:
        return self.root + "".join(f"[{_q(n)}]" for n in self.names)

    @property
    def present(self) -> str:
        """Set, every level a map on the way: never a runtime error on a wrong-typed value
        (the shape validations name such a value; see _shapes)."""
        parts, node = [], self.root
        for i, n in enumerate(self.names):
            if i:
                parts.append(f"type({node}) == map")
            parts.append(f"{_q(n)} in {node}")
            node += f"[{_q(n)}]"
        return "(" + " && ".join(parts) + ")"

    @property
    def is_map(self) -> str:
        return f"({self.present} && type({self.expr}) == map)"

    @property
    def is_list(self) -> str:
        return f"({self.present} && type({self.expr}) == list)"

    def prefixes(self) -> list["_P"]:
        """The parents on the way (spec, spec.scheduling for spec.scheduling.schedulingPolicy)."""
        out = []
        for i in range(1, len(self.names)):
            p = _P.__new__(_P)
            p.names, p.root, p.text = self.names[:i], self.root, ".".join(self.names[:i])
            out.append(p)
        return out

    def has(self, member: str) -> str:
        return f"({self.is_map} && {_q(member)} in {self.expr})"

    def member_map(self, member: str) -> str:
        return f"({self.has(member)} && type({self.expr}[{_q(member)}]) == map)"

    def as_list(self) -> str:
        """A list block as the engine compares it: absent and [] are the same."""
        return f"({self.is_list} ? {self.expr} : [])"

    def topology(self) -> str:
        return (f"({self.has('topology')} && type({self.expr}['topology']) == list ? "
                f"{self.expr}['topology'] : [])")


def _same(p: _P, kind: str) -> str:
    """New and stored block equal, as the engine's `same()` sees them (absent == [] for lists)."""
    o = p.old()
    if kind == "list":
        return f"({p.as_list()} == {o.as_list()})"
    if kind == "constraints":
        return f"({p.present} == {o.present} && (!{p.present} || {p.topology()} == {o.topology()}))"
    return f"({p.present} == {o.present} && (!{p.present} || {p.expr} == {o.expr}))"


def _changed(*paths: _P, kinds: dict | None = None) -> str:
    """CREATE, or an UPDATE that set, cleared or changed one of these (ratcheting)."""
    parts = [f"!{_same(p, (kinds or {}).get(id(p), 'value'))}" for p in paths]
    return "(oldObject == null || " + " || ".join(parts) + ")"


def _v(rule: str, expression: str, message: str, when: str | None = None) -> tuple[str, dict]:
    expr = f"!{when} || ({expression})" if when else expression
    return rule, {"expression": expr, "messageExpression": message, "reason": "Invalid"}


def _msg(path: str, body: str) -> str:
    return _q(f"{path}: {body}")


def _union(p: _P, a: str, b: str, rule: str, when: str) -> tuple[str, dict]:
    one = f"((({_q(a)} in {p.expr}) ? 1 : 0) + (({_q(b)} in {p.expr}) ? 1 : 0) == 1)"
    return _v(rule, f"!{p.is_map} || {one}", _msg(p.text, f"Invalid value: must specify exactly one of: `{a}`, `{b}`"), when)


def _typed(p: _P, cel_type: str, words: str) -> tuple[str, dict]:
    return _v("SHAPE", f"!{p.present} || type({p.expr}) == {cel_type}", _msg(p.text, f"Invalid value: must be of type {words}"))


def _shapes(group: LeafGroup, pol, dis, con, clm) -> list[tuple[str, dict]]:
    """A wrong-typed value is denied with a message naming its field (as the webhook's shape
    check), never with a CEL runtime error: every other validation stays silent on it."""
    out: list[tuple[str, dict]] = []
    seen: set[str] = set()
    blocks = [(p, "list" if p is clm else "map") for p in (pol, dis, con, clm) if p]
    size = _P(group.size.path) if group.size is not None and group.size.path is not None else None
    for p, _ in blocks + ([(size, "int")] if size else []):
        for parent in p.prefixes():
            if parent.text not in seen:
                seen.add(parent.text)
                out.append(_typed(parent, "map", "object"))
    for p, kind in blocks:
        out.append(_typed(p, kind, "object" if kind == "map" else "list"))
    for p, members in ((pol, ("basic", "gang")), (dis, ("single", "all"))):
        for m in members if p else ():
            out.append(_v("SHAPE", f"!{p.has(m)} || type({p.expr}[{_q(m)}]) == map",
                          _msg(f"{p.text}.{m}", "Invalid value: must be of type object")))
    if pol:
        count = f"{pol.expr}['gang']['minCount']"
        out.append(_v("SHAPE", f"!({pol.member_map('gang')} && 'minCount' in {pol.expr}['gang']) || type({count}) == int",
                      _msg(f"{pol.text}.gang.minCount", "Invalid value: must be of type integer")))
    if size:
        out.append(_v("SHAPE", f"!{size.present} || type({size.expr}) == int",
                      _msg(size.text, "Invalid value: must be of type integer: it is the group's size, "
                                      "which bounds gang.minCount")))
    if con:
        topo = f"{con.expr}['topology']"
        out.append(_v("SHAPE", f"!{con.has('topology')} || type({topo}) == list",
                      _msg(f"{con.text}.topology", "Invalid value: must be of type list")))
        out.append(_v("SHAPE", f"!{con.has('topology')} || type({topo}) != list || {topo}.all(t, type(t) == map && "
                               f"(!('key' in t) || type(t['key']) == string))",
                      _msg(f"{con.text}.topology", "Invalid value: each item must be an object with a string key")))
    if clm:
        L = clm.expr
        strings = " && ".join(f"(!({_q(k)} in c) || type(c[{_q(k)}]) == string)"
                              for k in ("name", "resourceClaimName", "resourceClaimTemplateName"))
        out.append(_v("SHAPE", f"!{clm.is_list} || {L}.all(c, type(c) == map && {strings})",
                      _msg(clm.text, "Invalid value: each item must be an object whose name and references are strings")))
    return out


def _leaf(group: LeafGroup, cfg: Config) -> list[tuple[str, dict]]:
    paths = group.paths()
    sem = group.semantics
    pol, dis = (_P(paths[k]) if k in paths else None for k in ("schedulingPolicy", "disruptionMode"))
    con, clm = (_P(paths[k]) if k in paths else None for k in ("schedulingConstraints", "resourceClaims"))
    out: list[tuple[str, dict]] = _shapes(group, pol, dis, con, clm)
    if pol:
        ch = _changed(pol)
        out.append(_union(pol, "basic", "gang", "POL-1", ch))
        count = f"{pol.expr}['gang']['minCount']"
        has_count = f"({pol.member_map('gang')} && 'minCount' in {pol.expr}['gang'] && type({count}) == int)"
        low = "1" if not sem.nonPositiveMinCountIsUnset else "-2147483648"
        out.append(_v("POL-2", f"!{has_count} || ({count} >= {low} && {count} <= 2147483647)",
                      _msg(f"{pol.text}.gang.minCount", "Invalid value: must be a 32-bit integer, at least 1"), ch))
        if sem.minCount == "unset":
            out.append(_v("POL-3", f"!{has_count}", _msg(f"{pol.text}.gang.minCount",
                                                        "Forbidden: is set by the operator from the group's size (POL-3)"), ch))
        if sem.minCountRequired:
            out.append(_v("POL-2", f"!{pol.member_map('gang')} || 'minCount' in {pol.expr}['gang']",
                          _msg(f"{pol.text}.gang.minCount", "Required value"), ch))
        if cfg.maxMinCount is not None:
            out.append(_v("POL-3", f"!{has_count} || {count} <= {cfg.maxMinCount}",
                          _msg(f"{pol.text}.gang.minCount", f"Invalid value: must be less than or equal to {cfg.maxMinCount} (POL-3)"), ch))
        if cfg.minCountWithinSize and group.size is not None and group.size.path is not None \
                and sem.minCount in ("atMostSize", "equalsSize"):
            size = _P(group.size.path)
            typed = f"({size.present} && type({size.expr}) == int)"
            value = f"({typed} ? {size.expr} : {group.size.default})" if group.size.default is not None else size.expr
            known = f"(!{size.present} || {typed})" if group.size.default is not None else typed
            op, words = ("<=", "less than or equal to") if sem.minCount == "atMostSize" else ("==", "equal to")
            positive = f" && {count} > 0" if sem.nonPositiveMinCountIsUnset else ""
            out.append(_v("POL-3", f"!({has_count} && {known}{positive}) || {count} {op} {value}",
                          f"{_q(pol.text + '.gang.minCount: Invalid value: must be ' + words + ' ' + size.text + ' (')}"
                          f" + string({value}) + ') (POL-3)'", _changed(pol, size)))
    if dis:
        out.append(_union(dis, "single", "all", "DIS-1", _changed(dis)))
        if cfg.forbidAllWithBasic:
            if sem.defaultPolicy == "gang":
                gang_ok = f"!({pol.has('basic')} && !{pol.has('gang')})" if pol else "true"
            else:
                gang_ok = pol.has("gang") if pol else "false"
            out.append(_v("DIS-2", f"!{dis.has('all')} || {gang_ok}",
                          _msg(dis.text, 'Invalid value: the disruptionMode `all` is not supported with the Basic '
                                         'scheduling policy; "all" requires a gang scheduling policy (DIS-2)'),
                          _changed(*(p for p in (dis, pol) if p))))
    if con:
        topo = f"{con.expr}['topology']"
        has_topo = f"({con.has('topology')} && type({topo}) == list && {topo}.all(t, type(t) == map))"
        ch = _changed(con, kinds={id(con): "constraints"})
        out.append(_v("CON-1", f"!{has_topo} || size({topo}) <= 1",
                      _msg(f"{con.text}.topology", "Too many: must have at most 1 item"), ch))
        ok = f"('key' in t && type(t['key']) == string && !{QUALIFIED}.validate(t['key']).hasValue())"
        bad = f"{topo}.indexOf({topo}.filter(t, !{ok})[0])"
        out.append(_v("CON-1", f"!{has_topo} || {topo}.all(t, {ok})",
                      f"{_q(con.text + '.topology[')} + string({bad}) + '].key: Invalid value: must be a qualified name'", ch))
    if clm:
        ch = _changed(clm, kinds={id(clm): "list"})
        L = clm.expr
        # Judged only when every item is a map of strings where names are (else the shape check speaks).
        clean = (f"({clm.is_list} && {L}.all(c, type(c) == map && " + " && ".join(
            f"(!({_q(k)} in c) || type(c[{_q(k)}]) == string)" for k in ("name", "resourceClaimName",
                                                                       "resourceClaimTemplateName")) + "))")
        out.append(_v("CLM-1", f"!{clm.is_list} || size({L}) <= 4", _msg(clm.text, "Too many: must have at most 4 items"), ch))
        def each(rule_ok: str, suffix: str, body: str) -> tuple[str, dict]:
            bad = f"{L}.indexOf({L}.filter(c, !({rule_ok}))[0])"
            return _v("CLM-1", f"!{clean} || {L}.all(c, {rule_ok})",
                      f"{_q(clm.text + '[')} + string({bad}) + {_q(']' + suffix + ': ' + body)}", ch)
        out.append(each("'name' in c", ".name", "Required value"))
        out.append(each(f"!('name' in c) || !{LABEL}.validate(c['name']).hasValue()", ".name",
                        "Invalid value: must be a DNS label"))
        def ref(r: str) -> str:          # present is set ("" too, then malformed), as for the engine and upstream
            return f"({_q(r)} in c)"
        out.append(each(f"(({ref('resourceClaimName')} ? 1 : 0) + ({ref('resourceClaimTemplateName')} ? 1 : 0) == 1)", "",
                        "Invalid value: must specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`"))
        for r in ("resourceClaimName", "resourceClaimTemplateName"):
            out.append(each(f"!{ref(r)} || !{SUBDOMAIN}.validate(c[{_q(r)}]).hasValue()", f".{r}",
                            "Invalid value: must be a DNS subdomain"))
        def name(x: str) -> str:         # names as written: an absent one is "" (Go's zero value)
            return f"('name' in {x} ? {x}['name'] : '')"
        dup = f"size({L}.filter(d, {name('d')} == {name('c')})) > 1"
        # the first item whose name an earlier item already has (where the webhook reports the Duplicate)
        second = f"{L}.transformList(i, c, {L}.exists(j, d, j < i && {name('d')} == {name('c')}), i)[0]"
        out.append(_v("CLM-1", f"!{clean} || !{L}.exists(c, {dup})",
                      f"{_q(clm.text + '[')} + string({second}) + {_q(']: Duplicate value: claim names must be unique')}", ch))
    out += _updates(pol, dis, con, clm, sem, group)
    return out


def _updates(pol, dis, con, clm, sem, group) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    upd = "(oldObject != null)"
    if group.semantics.setOnce is not None:
        h = _P(group.semantics.setOnce)
        out.append(_v("TGT-4", f"!{upd} || {h.present} == {h.old().present}",
                      _msg(h.text, "Invalid value: field cannot be set or cleared once created (TGT-4)")))
    if not sem.frozenBlocks:
        return out
    if pol:
        out.append(_v("POL-4", f"!{upd} || {pol.present} == {pol.old().present}",
                      _msg(pol.text, "Invalid value: field cannot be set or cleared once created")))
        same_variant = (f"!({pol.is_map} && {pol.old().is_map}) || "
                        f"({pol.has('basic')} == {pol.old().has('basic')} && "
                        f"{pol.has('gang')} == {pol.old().has('gang')})")
        out.append(_v("POL-4", f"!{upd} || {same_variant}", _msg(
            pol.text, "Invalid value: the basic/gang policy variant is immutable after creation")))
    for p, kind in ((dis, "value"), (con, "constraints"), (clm, "list")):
        if p:
            frozen = _same(p, kind)
            out.append(_v("DIS-3" if p is dis else "CON-1" if p is con else "CLM-1", f"!{upd} || ({frozen})",
                          _msg(p.text, "Invalid value: field is immutable")))
    return out


def key(target: Target) -> str:
    """How `replace` names an exported target: kind and group (a kind may exist in two groups)."""
    return target.key


def export(cfg: Config, name: str = "workload-webhook", exclude: tuple[str, ...] = ("kube-system",),
           resources: Mapping[str, str] | None = None) -> Export:
    """`exclude`: namespaces the policies leave alone, as the webhook configurations do.
    `resources`: Kind.group -> resource (webhook.cluster.discovery); without it, the config must
    tell each exported target's (webhook.targets.offline_resources raises UnknownResource)."""
    out = Export()
    for target in cfg.targets:
        why = _reasons(target, cfg)
        if why:
            out.left += [f"{target.kind}.{target.group}: {w}" for w in why]
            continue
        rules: list[tuple[str, dict]] = []
        for group in target.groups:
            rules += _leaf(group, cfg)
        by_action: dict[str, list[dict]] = {}
        for rule, validation in rules:
            action = cfg.enforcement.action(rule if rule in _POLICY else None, target.kind, lambda: None, "admission")
            by_action.setdefault(action, []).append(validation)
        resource = (resources or {}).get(target.key) or offline_resources([target])[target.key]
        for action in sorted(by_action, key=RANK.__getitem__):
            out.objects += _policy(target, resource, action, by_action[action], name, exclude)
        out.expressible.add(key(target))
    return out


_POLICY = {"POL-3", "DIS-2", "TGT-4"}


def _policy(target: Target, resource: str, action: str, validations: list[dict], name: str,
            exclude: tuple[str, ...]) -> list[dict]:
    policy_name = f"{name}-{resource}.{target.group}" + ("" if action == "deny" else f"-{action}")
    labels = {"app.kubernetes.io/name": "workload-webhook"}
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": policy_name, "labels": labels},
              "spec": {"failurePolicy": "Fail",
                       "matchConstraints": {"resourceRules": [{
                           "apiGroups": [target.group], "apiVersions": list(target.versions) or ["*"],
                           "resources": [resource], "operations": ["CREATE", "UPDATE"]}],
                           "namespaceSelector": {"matchExpressions": [
                               {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": sorted(exclude)}]}},
                       "validations": validations}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": policy_name, "labels": labels},
               "spec": {"policyName": policy_name, "validationActions": [ACTIONS[action]]}}
    return [policy, binding]
