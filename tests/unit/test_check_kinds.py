"""The generic vocabulary the operator rules are written in (webhook.semantics
Cond, Agree, Refuse, Require, Matched, SetOnce; map-key path segments), on a
target of its own: each kind and each condition, how a `[*]` binds, the
config errors, and that nothing raises on a value of the wrong JSON type."""
from __future__ import annotations

import pytest

from webhook import config as config_mod
from webhook import engine
from webhook.paths import FieldPath, get
from webhook.schemas import structural_errors


def target(checks: dict, conditions: dict | None = None, **group) -> config_mod.Config:
    t = {"group": "g.io", "kind": "T", "groups": [{"at": "spec.scheduling", **group}], "checks": checks}
    if conditions:
        t["conditions"] = conditions
    return config_mod.from_dict({"targets": [t]})


def obj(spec: dict, **meta) -> dict:
    return {"apiVersion": "g.io/v1", "kind": "T", "metadata": {"name": "t", **meta}, "spec": spec}


def said(cfg, new, old=None) -> list[str]:
    return [str(e) for e in engine.validate(engine.Request.for_object(new, old), cfg).errors]


# ---------------------------------------------------------------- map-key segments

@pytest.mark.parametrize("text", ["metadata.annotations[example.com/key]", "metadata.labels[app]",
                                  "metadata.annotations[a.io/b-c_d].x", "spec.items[*].labels[k8s.io/x]"])
def test_map_key_paths_round_trip_and_are_config_paths(text):
    p = FieldPath.parse(text)
    assert str(p) == text
    assert structural_errors("config", {"targets": [{"group": "g.io", "kind": "T", "groups": [{"at": "spec.s"}],
                                                     "checks": {"refuse": [{"path": text, "message": "m"}]}}]}) == []


@pytest.mark.parametrize("text", ["spec.jobs[0]", "a[]", "a[*][k]", "a[b", "a[b]c", "a[k]]", "a[b c]"])
def test_bad_map_key_paths_are_refused(text):
    with pytest.raises(ValueError):
        FieldPath.parse(text)
    assert structural_errors("config", {"targets": [{"group": "g.io", "kind": "T", "groups": [{"at": text}]}]})


def test_a_map_key_reads_the_key_and_renders_like_upstream():
    p = FieldPath.parse("metadata.annotations[scheduling.k8s.io/group-template-name]")
    o = {"metadata": {"annotations": {"scheduling.k8s.io/group-template-name": "tpl"}}}
    assert get(o, p.concrete(())) == "tpl"
    assert str(p.concrete(())) == "metadata.annotations[scheduling.k8s.io/group-template-name]"


# ---------------------------------------------------------------- conditions (through `require`)

def _need(need, when=None) -> config_mod.Config:
    entry = {"at": "spec.x", "need": need, "message": "m"}
    if when is not None:
        entry["when"] = when
    return target({"require": [entry]})


@pytest.mark.parametrize("need,spec,holds", [
    ("spec.x", {"x": {}}, True), ("spec.x", {"x": ""}, True), ("spec.x", {}, False),
    ({"path": "spec.x", "set": False}, {}, True), ({"path": "spec.x", "set": False}, {"x": 0}, False),
    ({"path": "spec.x", "nonEmpty": True}, {"x": "a"}, True), ({"path": "spec.x", "nonEmpty": True}, {"x": ""}, False),
    ({"path": "spec.x", "nonEmpty": True}, {"x": []}, False), ({"path": "spec.x", "nonEmpty": True}, {"x": {"a": 1}}, True),
    ({"path": "spec.x", "nonEmpty": False}, {"x": []}, True),
    ({"path": "spec.x", "equals": 1}, {"x": 1}, True), ({"path": "spec.x", "equals": 1}, {"x": True}, False),
    ({"path": "spec.x", "equals": {"a": [1]}}, {"x": {"a": [1]}}, True),
    ({"path": "spec.x", "greaterThan": 0}, {"x": 1}, True), ({"path": "spec.x", "greaterThan": 0}, {"x": "1"}, False),
    ({"path": "spec.x", "greaterThan": 0}, {"x": True}, False),
    ({"path": "spec.x", "count": 1}, {"x": ["a"]}, True), ({"path": "spec.x", "count": 0}, {}, True),
    ({"path": "spec.x", "count": 1}, {"x": "a"}, False),
    ({"path": "spec.x", "contains": {"type": "S", "status": "True"}}, {"x": [{"type": "S", "status": "True", "r": 1}]}, True),
    ({"path": "spec.x", "contains": {"type": "S", "status": "True"}}, {"x": [{"type": "S", "status": "False"}]}, False),
    ({"path": "spec.x", "contains": {"controller": True}}, {"x": [{"controller": "true"}]}, False),
    ({"allOf": ["spec.x", {"path": "spec.x", "equals": 1}]}, {"x": 1}, True),
    ({"anyOf": [{"path": "spec.x", "equals": 2}, {"path": "spec.x", "equals": 1}]}, {"x": 1}, True),
    ({"not": "spec.x"}, {"x": 1}, False),
    ({"path": "spec.items[*].a", "equals": 1}, {"x": 0, "items": [{"a": 0}, {"a": 1}]}, True),   # some item
    ({"path": "spec.items[*].a", "equals": 1}, {"x": 0, "items": []}, False),
    ({"path": "spec.items[*].a", "set": False}, {"x": 0, "items": [{"a": 0}]}, False),   # no item has it
])
def test_each_condition(need, spec, holds):
    assert said(_need(need), obj(spec)) == ([] if holds else [f"spec.x: Invalid value: {_shown(spec)}: m"])


def _shown(spec):
    from webhook.field import format_value
    return format_value(spec.get("x"))


def test_old_reads_the_stored_object_and_is_false_on_create():
    cfg = _need({"old": {"path": "spec.x", "equals": 1}})
    assert said(cfg, obj({"x": 2})) == ["spec.x: Invalid value: 2: m"]
    assert said(cfg, obj({"x": 2}), obj({"x": 1})) == []


def test_named_conditions_use_earlier_ones_and_an_unknown_name_is_a_config_error():
    cfg = target({"require": [{"at": "spec.x", "need": {"ref": "both"}, "message": "m"}]},
                 {"one": {"path": "spec.x", "equals": 1}, "both": {"allOf": [{"ref": "one"}, "spec.y"]}})
    assert said(cfg, obj({"x": 1, "y": 0})) == []
    assert said(cfg, obj({"x": 1})) == ["spec.x: Invalid value: 1: m"]
    with pytest.raises(config_mod.ConfigError, match="conditions\\[a\\].ref"):
        target({}, {"a": {"ref": "b"}, "b": "spec.x"})


def test_a_rule_binds_the_star_it_fans_out_over():
    cfg = target({"refuse": [{"path": "spec.items[*].a", "when": "spec.items[*].b", "message": "m"}]})
    o = obj({"items": [{"a": 1}, {"a": 1, "b": 1}]})
    assert said(cfg, o) == ["spec.items[1].a: Forbidden: m"]


def test_resolves_counts_names_an_earlier_list_did_not_take():
    cfg = target({"require": [{"at": "spec.groups[*].names", "need": {"path": "spec.groups[*].names", "resolves": "spec.items"},
                               "message": "m"}]})
    o = obj({"items": [{"name": "a"}, {"name": "b"}], "groups": [{"names": ["a"]}, {"names": ["a", "x"]}, {"names": ["b"]}]})
    assert said(cfg, o) == ['spec.groups[1].names: Invalid value: ["a","x"]: m']


# ---------------------------------------------------------------- the kinds

def test_agree_over_paths_reports_each_differing_value_or_once_at():
    cfg = target({"agree": [{"paths": ["spec.items[*].p"], "default": "", "message": "want {expected}, not {actual}"}]})
    assert said(cfg, obj({"items": [{"p": "a"}, {}, {"p": "a"}, {"p": 7}]})) == [
        'spec.items[1].p: Invalid value: "": want "a", not ""', 'spec.items[3].p: Invalid value: 7: want "a", not 7']
    once = target({"agree": [{"paths": ["spec.l.p", "spec.w.p"], "at": "spec", "value": None, "type": "Forbidden",
                              "message": "differ"}]})
    assert said(once, obj({"l": {"p": 1}, "w": {"p": 2}})) == ["spec: Forbidden: differ"]
    assert said(once, obj({"l": {"p": 1}, "w": {"p": 1}})) == []


@pytest.mark.parametrize("index,at", [("written", 2), ("resolved", 1)])
def test_agree_over_named_items_reports_at_the_written_or_the_resolved_position(index, at):
    cfg = target({"agree": [{"names": "spec.groups[*].names", "within": "spec.items", "field": "p", "index": index,
                             "message": "m"}]})
    o = obj({"items": [{"name": "a", "p": 1}, {"name": "b", "p": 2}], "groups": [{"names": ["x", "a", "b"]}]})
    assert said(cfg, o) == [f'spec.groups[0].names[{at}]: Invalid value: "b": m']


def test_matched_needs_an_exact_item_in_each_list_whose_condition_holds():
    cfg = target({"matched": [{"items": "spec.shared[*]", "keys": ["name", "ref"], "show": "name", "in": [
        {"list": "spec.a", "message": "not in a"}, {"list": "spec.b", "when": "spec.useB", "message": "not in b"}]}]})
    item = {"name": "n", "ref": "r"}
    assert said(cfg, obj({"shared": [item], "a": [item]})) == []
    assert said(cfg, obj({"shared": [item], "a": [{"name": "n", "ref": "r2"}], "useB": True})) == [
        'spec.shared[0]: Invalid value: "n": not in a', 'spec.shared[0]: Invalid value: "n": not in b']


def test_require_alone_drops_every_other_error_of_the_target():
    cfg = target({"require": [{"at": "spec.size", "when": "spec.scheduling", "need": "spec.size", "message": "m", "alone": True}]})
    bad = obj({"scheduling": {"schedulingPolicy": {}}})
    assert said(cfg, bad) == ["spec.size: Invalid value: null: m"]
    assert said(cfg, obj({"size": 1, "scheduling": {"schedulingPolicy": {}}})) == [
        'spec.scheduling.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`']


def test_set_once_check_states_the_operators_type_and_texts():
    cfg = target({"setOnce": [{"path": "spec.scheduling", "type": "Forbidden", "added": "no add", "removed": "no remove",
                               "alone": ["removed"]}]})
    with_s, without = obj({"scheduling": {}}), obj({})
    assert said(cfg, with_s, without) == ["spec.scheduling: Forbidden: no add"]
    assert said(cfg, without, with_s) == ["spec.scheduling: Forbidden: no remove"]
    assert said(cfg, with_s) == [] and said(cfg, with_s, with_s) == []


def test_the_condition_kinds_ratchet_on_what_the_stored_object_already_broke():
    cfg = target({"refuse": [{"path": "spec.a", "when": "spec.b", "message": "m"}]})
    stored = obj({"a": 1, "b": 1})
    assert said(cfg, obj({"a": 1, "b": 1, "c": 1}), stored) == []
    assert said(cfg, obj({"a": 2, "b": 1}), stored) == ["spec.a: Forbidden: m"]   # a different value: the update's


def test_bound_unless_lifts_pol3():
    cfg = target({}, {"seq": {"path": "spec.order", "equals": "InOrder"}}, size="spec.replicas", boundUnless={"ref": "seq"})
    o = {"replicas": 2, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 3}}}}
    assert len(said(cfg, obj(o))) == 1
    assert said(cfg, obj({**o, "order": "InOrder"})) == []


def test_operator_owned_and_immutable_take_the_operators_words():
    cfg = target({"operatorOwned": [{"path": "spec.g", "at": "spec", "message": "no g"}],
                  "immutable": [{"path": "spec.f", "unless": {"old": {"path": "spec.open", "equals": True}},
                                 "value": "", "message": "field is immutable"}]})
    assert said(cfg, obj({"g": 1})) == ["spec: Forbidden: no g"]
    assert said(cfg, obj({"f": 2}), obj({"f": 1})) == ['spec.f: Invalid value: "": field is immutable']
    assert said(cfg, obj({"f": 2}), obj({"f": 1, "open": True})) == []


@pytest.mark.parametrize("checks", [
    {"refuse": [{"path": "spec.a"}]},                                              # the operator's words are required
    {"agree": [{"paths": ["spec.a"], "names": "spec.n", "within": "spec.l", "field": "x", "message": "m"}]},
    {"agree": [{"names": "spec.n[*].x", "message": "m"}]},
    {"agree": [{"paths": ["spec.a"], "at": "spec.l[*].x", "message": "m"}]},
    {"agree": [{"names": "spec.n[*].x", "within": "spec.l", "field": "a[*].b", "message": "m"}]},
    {"require": [{"at": "spec.a", "need": {"path": "spec.a", "resolves": "spec.l[*].x"}, "message": "m"}]},
    {"require": [{"at": "spec.a", "need": {"path": "spec.a", "equals": 1, "set": True}, "message": "m"}]},
    {"setOnce": [{"path": "spec.l[*].x", "added": "a", "removed": "r"}]},
    {"matched": [{"items": "spec.i[*]", "keys": ["name"], "in": [{"list": "spec.o[*].l", "message": "m"}]}]},
    {"refuse": [{"path": "spec.a", "message": "m", "type": "TooMany"}]},
])
def test_bad_check_entries_are_config_errors(checks):
    with pytest.raises(config_mod.ConfigError):
        target(checks)


@pytest.mark.parametrize("spec", [
    {"items": "x", "groups": 3, "shared": {"a": 1}, "x": [None]},
    {"items": [1, None, [2]], "groups": [None, {"names": {"a": 1}}], "shared": [None, 3], "a": "s", "b": [1]},
])
def test_wrong_json_types_never_raise(spec):
    cfg = target({"agree": [{"paths": ["spec.items[*].p"], "message": "m"},
                            {"names": "spec.groups[*].names", "within": "spec.items", "field": "p", "message": "m"}],
                  "matched": [{"items": "spec.shared[*]", "keys": ["name"], "in": [{"list": "spec.a", "message": "m"}]}],
                  "refuse": [{"path": "spec.items[*].p", "when": {"path": "spec.x", "contains": {"a": 1}}, "message": "m"}],
                  "require": [{"at": "spec.groups[*].names", "need": {"path": "spec.groups[*].names", "resolves": "spec.items"},
                               "message": "m"}],
                  "setOnce": [{"path": "spec.b", "added": "a", "removed": "r"}]})
    for old in (None, obj({"b": None, "items": [{"name": 1}]})):
        for e in engine.validate(engine.Request.for_object(obj(spec, annotations=[1]), old), cfg).errors:
            str(e)
