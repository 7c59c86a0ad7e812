"""The JSON Schema of one configured target (a CRD or a profile's kind) with the
building blocks at its paths, for editors (`# yaml-language-server: $schema=`)
and kubeconform. It states what JSON Schema can: each block's shape and
unions (exactly one member), counts (minCount >= 1, at most 1 topology entry,
at most 4 claims, one claim reference) and, where policy and disruption mode
sit side by side, DIS-2 (`all` needs a gang). Fields outside the blocks are
left open. Rules across objects or sizes (POL-3, references, updates) stay
the webhook's."""
from __future__ import annotations

import copy
from typing import Any

from webhook.targets import CompositeGroup, LeafGroup, Target
from webhook.paths import FieldPath
from webhook.schemas import all_schemas

DRAFT = "https://json-schema.org/draft/2020-12/schema"
def _exactly_one(a: str, b: str, kind: str = "object") -> dict:
    """A union as the engine reads it: one of two members set (null counts as unset); a null block passes."""
    def has(m):
        return {"required": [m], "properties": {m: {"type": kind}}}
    return {"if": {"type": "object"}, "then": {"anyOf": [has(a), has(b)], "not": {
        "required": [a, b], "properties": {a: {"type": kind}, b: {"type": kind}}}}}



# Not `false`: validators then name the parent object, not the field (TGT-6).
_OWNED = {"not": {}, "description": "set by the operator; leave it unset (TGT-6)"}


def _shape(name: str) -> dict:
    schema = copy.deepcopy(all_schemas()[name])
    for key in ("$schema", "$id", "title"):
        schema.pop(key, None)
    return schema


def _policy(group: LeafGroup | None) -> dict:
    sem = group.semantics if group else None
    count: dict = {"type": ["integer", "null"]}
    if not (sem and sem.nonPositiveMinCountIsUnset):
        count["minimum"] = 1
    gang: dict = {"type": ["object", "null"], "properties": {"minCount": count}}
    if sem and sem.minCountRequired:
        gang = {**gang, "if": {"type": "object"}, "then": {"required": ["minCount"],
                                                            "properties": {"minCount": {"type": "integer"}}}}
    return {"allOf": [_shape("blocks/scheduling-policy"), _exactly_one("basic", "gang"), {"properties": {"gang": gang}}]}


def _block(key: str, group: LeafGroup | None) -> dict:
    if key == "schedulingPolicy":
        return _policy(group)
    if key == "disruptionMode":
        return {"allOf": [_shape("blocks/disruption-mode"), _exactly_one("single", "all")]}
    if key == "schedulingConstraints":
        return {"allOf": [_shape("blocks/scheduling-constraints"), {"properties": {
            "topology": {"type": ["array", "null"], "maxItems": 1, "items": {"required": ["key"]}}}}]}
    claim = {"required": ["name"], **_exactly_one("resourceClaimName", "resourceClaimTemplateName", "string")}
    return {"allOf": [_shape("blocks/resource-claims"), {"type": ["array", "null"], "maxItems": 4, "items": claim}]}


def _composite_policy() -> dict:
    return {"allOf": [_shape("blocks/composite-scheduling-policy"), _exactly_one("basic", "gang"), {"properties": {
        "gang": {"type": ["object", "null"], "properties": {"minGroupCount": {"type": ["integer", "null"], "minimum": 1}}}}}]}


def _node(root: dict, path: FieldPath) -> tuple[dict, str]:
    """The object schema holding the last segment of `path` (created on the way), and that segment."""
    node = root
    for name, fan in path.segments[:-1]:
        child = node.setdefault("properties", {}).setdefault(name, {"type": "object"})
        if fan:
            child["type"] = "array"
            child = child.setdefault("items", {"type": "object"})
        node = child
    name, fan = path.segments[-1]
    return node, name


def _place(root: dict, path: FieldPath, schema: dict) -> dict:
    node, name = _node(root, path)
    props = node.setdefault("properties", {})
    props[name] = {**props.get(name, {}), **schema} if not path.segments[-1][1] else \
        {"type": "array", "items": schema}
    return node


def _dis2(parent: dict, policy_key: str, mode_key: str, default_policy: str) -> None:
    """`all` needs a gang, reported at the disruption mode (as the webhook does)."""
    def member(m):
        return {"required": [m], "properties": {m: {"type": "object"}}}
    no_gang = {"not": {"required": [policy_key], "properties": {policy_key: member("gang")}}}
    if default_policy == "gang":      # an unset policy is a gang: only an explicit basic refuses `all`
        no_gang = {"required": [policy_key], "properties": {policy_key: member("basic")}}
    parent.setdefault("allOf", []).append({"if": no_gang, "then": {"properties": {
        mode_key: {"not": member("all"), "description": "`all` needs a gang scheduling policy (DIS-2)"}}}})


def _leaf(root: dict, group: LeafGroup, dis2: bool) -> None:
    parents = {}
    for key, path in group.paths().items():
        if key.startswith("size"):
            continue
        parents[key] = (_place(root, path, _block(key, group)), path.segments[-1][0])
    pol, mode = parents.get("schedulingPolicy"), parents.get("disruptionMode")
    if dis2 and pol and mode and pol[0] is mode[0]:
        _dis2(pol[0], pol[1], mode[1], group.semantics.defaultPolicy)


def _composite(root: dict, comp: CompositeGroup, dis2: bool) -> None:
    pol = _place(root, comp.schedulingPolicy, _composite_policy())
    if comp.disruptionMode is not None:
        mode = _place(root, comp.disruptionMode, _block("disruptionMode", None))
        if dis2 and mode is pol:
            _dis2(pol, comp.schedulingPolicy.segments[-1][0], comp.disruptionMode.segments[-1][0], "basic")
    if comp.schedulingConstraints is not None:
        _place(root, comp.schedulingConstraints, _block("schedulingConstraints", None))
    _place(root, comp.children, {"type": "array"})


def _nested(segments: tuple, leaf: Any) -> dict:
    """A schema that reaches `leaf` along relative path segments (`[*]`: every item)."""
    node: Any = leaf
    for name, fan in reversed(segments):
        if fan:
            node = {"type": "array", "items": node}
        node = {"properties": {name: node}}
    return node


def _owned(root: dict, path: FieldPath, when: FieldPath | None) -> None:
    """An operator-owned field is `false` (absent), while `when` is set when given (TGT-6)."""
    if when is None:
        _node(root, path)[0].setdefault("properties", {})[path.segments[-1][0]] = _OWNED
        return
    common = 0
    while common < min(len(path.segments), len(when.segments)) - 1 and path.segments[common] == when.segments[common] \
            and not path.segments[common][1]:
        common += 1
    anchor = root
    for name, _ in path.segments[:common]:
        anchor = anchor.setdefault("properties", {}).setdefault(name, {"type": "object"})
    rel_when, rel_path = when.segments[common:], path.segments[common:]
    condition: dict = {"required": [rel_when[-1][0]], "properties": {rel_when[-1][0]: {"not": {"type": "null"}}}}
    for name, _ in reversed(rel_when[:-1]):      # every level present: an absent parent means `when` is unset
        condition = {"required": [name], "properties": {name: condition}}
    anchor.setdefault("allOf", []).append({"if": condition, "then": _nested(rel_path[:-1], {"properties": {
        rel_path[-1][0]: _OWNED}})})


def for_target(target: Target, dis2: bool = True, owned: bool = True) -> dict[str, Any]:
    """`dis2` / `owned`: write DIS-2 / TGT-6 in (only when the CLI's enforcement denies them)."""
    api_versions = [f"{target.group}/{v}" for v in target.versions]
    root: dict[str, Any] = {
        "$schema": DRAFT,
        "title": f"{target.kind} ({target.group}) with the Workload-Aware Scheduling blocks",
        "description": "Generated by `workload-webhook schemas --target`: the blocks' shape and counts; "
                       "the webhook judges the rest (sizes, references, updates).",
        "type": "object", "required": ["apiVersion", "kind"],
        "properties": {"apiVersion": {"enum": api_versions} if api_versions else
                       {"type": "string", "pattern": f"^{target.group.replace('.', '[.]')}/"},
                       "kind": {"const": target.kind}}}
    for group in target.groups:
        _leaf(root, group, dis2)
    if target.composite is not None:
        _composite(root, target.composite, dis2)
    for g in target.checks.operatorOwned if owned else ():
        _owned(root, g.path, g.when)
    return root
