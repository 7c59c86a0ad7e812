"""Checks guarded by conditions (webhook.semantics Refuse, Require, SetOnce): a
field refused while a condition holds, a condition required while another
holds, and a field that may not appear or vanish on update. Each states an
operator's own rule in its words, so its errors are mirrors: no rule id in their
text (their `rule` is the metrics' and logs' id)."""
from __future__ import annotations

from webhook.field import OMIT, FieldError
from webhook.paths import get_or_none
from webhook.rules.conditions import holds
from webhook.semantics import Refuse, Require, SetOnce


def refuse(obj: dict, old: dict | None, r: Refuse) -> list[FieldError]:
    out: list[FieldError] = []
    memo: dict = {}
    for b in r.path.bindings(obj)[0]:
        at = r.path.concrete(b)
        value = get_or_none(obj, at)
        if value is not None and holds(r.when, obj, old, b, r.path, memo):
            out.append(FieldError(r.report.type, at, value if r.report.value is OMIT else r.report.value, r.report.message,
                                  mirror=r.report.rule))
    return out


def require(obj: dict, old: dict | None, r: Require) -> list[FieldError]:
    out: list[FieldError] = []
    memo: dict = {}
    for b in r.at.bindings(obj)[0]:
        if holds(r.when, obj, old, b, r.at, memo) and not holds(r.need, obj, old, b, r.at, memo):
            at = r.at.concrete(b)
            value = get_or_none(obj, at) if r.report.value is OMIT else r.report.value
            out.append(FieldError(r.report.type, at, value, r.report.message, mirror=r.report.rule))
    return out


def set_once(obj: dict, old: dict | None, s: SetOnce) -> tuple[list[FieldError], bool]:
    """(the error, whether it stands alone). Update only."""
    if old is None:
        return [], False
    at = s.path.concrete(())
    new, before = get_or_none(obj, at), get_or_none(old, at)
    way = "added" if before is None and new is not None else "removed" if before is not None and new is None else None
    if way is None:
        return [], False
    error = FieldError(s.type, at, OMIT, s.added if way == "added" else s.removed, mirror=s.rule)
    return [error], way in s.alone
