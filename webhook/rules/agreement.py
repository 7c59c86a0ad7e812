"""Checks that compare values across an object (webhook.semantics Agree, Matched):
values that must agree with a reference (the first), and items that must have
an exact match in other lists. Both state an operator's own rule in its words
(a OperatorWording), so their errors are mirrors: no rule id in their text."""
from __future__ import annotations

import json
from typing import Any

from webhook.field import OMIT, FieldError, Path, format_value
from webhook.paths import get_or_none, item_name
from webhook.rules.conditions import holds, resolve, same_json, values
from webhook.semantics import Agree, Matched


def quoted(value: Any) -> str:
    """A value as Go's %q / %v print it in a message: strings quoted, the rest as JSON."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else format_value(value)


def _text(message: str, expected: Any, actual: Any) -> str:
    return message.replace("{expected}", quoted(expected)).replace("{actual}", quoted(actual))


def _error(a: Agree, at: Path, value: Any, expected: Any, actual: Any) -> FieldError:
    return FieldError(a.report.type, at, value if a.report.value is OMIT else a.report.value,
                      _text(a.report.message, expected, actual), mirror=a.report.rule)


def agree(obj: dict, old: dict | None, a: Agree) -> list[FieldError]:
    if a.names is not None:
        return _agree_named(obj, old, a)
    if not holds(a.when, obj, old):
        return []
    found = [(p.concrete(b), a.default if v is None else v) for p in a.paths for b, v in values(obj, p, (), None)]
    if not found:
        return []
    expected = found[0][1]
    bad = [(at, v) for at, v in found[1:] if not same_json(v, expected)]
    if a.at is not None:
        return [_error(a, a.at.concrete(()), OMIT, expected, bad[0][1])] if bad else []
    return [_error(a, at, v, expected, v) for at, v in bad]


def _agree_named(obj: dict, old: dict | None, a: Agree) -> list[FieldError]:
    """Per list of names: the items they resolve to (first naming wins) agree on `field`."""
    items = get_or_none(obj, a.within.concrete(()))
    by_name: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        by_name.setdefault(item_name(item), item)

    def value(name: str) -> Any:
        v = get_or_none(by_name.get(name), a.field)
        return a.default if v is None else v
    out: list[FieldError] = []
    memo: dict = {}
    for b, resolved in resolve(obj, a.names, a.within).items():
        if len(resolved) < 2 or not holds(a.when, obj, old, b, a.names, memo):
            continue
        expected = value(resolved[0][1])
        for k, (j, name) in enumerate(resolved[1:], 1):
            actual = value(name)
            if not same_json(actual, expected):
                at = a.names.concrete(b).index(k if a.index == "resolved" else j)
                out.append(_error(a, at, name, expected, actual))
    return out


def matched(obj: dict, old: dict | None, m: Matched) -> list[FieldError]:
    out: list[FieldError] = []
    memo: dict = {}
    for b in m.items.bindings(obj)[0]:
        item = get_or_none(obj, m.items.concrete(b))
        if not isinstance(item, dict):
            continue        # the CRD schema's to refuse
        for lst in m.lists:
            if not holds(lst.when, obj, old, b, m.items, memo):
                continue
            entries = get_or_none(obj, lst.list.concrete(b[:lst.list.wildcards]))
            if not (isinstance(entries, list) and any(
                    isinstance(e, dict) and all(same_json(e.get(k), item.get(k)) for k in m.keys) for e in entries)):
                out.append(FieldError(m.type, m.items.concrete(b), item.get(m.show) if m.show else item, lst.message,
                                      mirror=m.rule))
    return out
