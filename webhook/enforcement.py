"""What happens to a violation (issue: safe rollout): `deny` (refused),
`warn` (admitted; kubectl prints the error as a warning) or `audit` (admitted
silently; recorded as an audit annotation, a metric and a log line).

Only this service's own policy rules (errors carrying a rule id) can be
relaxed; a mirror of kube-apiserver's validation is always denied (the API
server would refuse the object anyway). The action of one violation: the
first matching `namespaces` entry, else `rules[id]`, else `targets[kind]`,
else `default`; an override may be limited to `scopes` (admission, cli,
audit). A request is refused when any violation is denied, else admitted."""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from webhook.catalogue import ACTIONS, OWN_POLICY
from webhook.field import FieldError, Path, invalid, not_supported
from webhook.verdict import Verdict

SCOPES = ("admission", "cli", "audit")
RANK = {a: i for i, a in enumerate(ACTIONS)}
# This service's own policy rules (webhook/catalogue.py): the only ones an action other than deny applies to.
POLICY_RULES = OWN_POLICY


@dataclass(frozen=True)
class Override:
    action: str
    scopes: tuple[str, ...] = SCOPES


def selects(match_labels: tuple[tuple[str, str], ...], match_expressions: tuple[tuple[str, str, tuple[str, ...]], ...],
            labels: dict) -> bool:
    """A label selector (matchLabels and matchExpressions, as a webhook's namespaceSelector) over labels."""
    if any(labels.get(k) != v for k, v in match_labels):
        return False
    for key, op, values in match_expressions:
        have = key in labels
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and have and labels[key] in values) \
                or (op == "Exists" and not have) or (op == "DoesNotExist" and have):
            return False
    return True


@dataclass(frozen=True)
class NamespaceRule:
    matchLabels: tuple[tuple[str, str], ...]
    matchExpressions: tuple[tuple[str, str, tuple[str, ...]], ...]
    override: Override

    def matches(self, labels: dict) -> bool:
        return selects(self.matchLabels, self.matchExpressions, labels)


@dataclass(frozen=True)
class Enforcement:
    default: Override = field(default_factory=lambda: Override("deny"))
    rules: tuple[tuple[str, Override], ...] = ()
    targets: tuple[tuple[str, Override], ...] = ()
    namespaces: tuple[NamespaceRule, ...] = ()

    def action(self, rule: str | None, kind: str, labels: Callable[[], dict | None], scope: str) -> str:
        if rule is None:
            return "deny"
        if self.namespaces:
            ns_labels = labels()
            if ns_labels is not None:
                for ns in self.namespaces:
                    if scope in ns.override.scopes and ns.matches(ns_labels):
                        return ns.override.action
        for table, key in ((self.rules, rule), (self.targets, kind)):
            o = dict(table).get(key)
            if o is not None and scope in o.scopes:
                return o.action
        return self.default.action if scope in self.default.scopes else "deny"


def _override(raw: Any, where: Path, errors: list[FieldError]) -> Override | None:
    raw = {"action": raw} if isinstance(raw, str) else raw
    if raw.get("action") not in ACTIONS:
        errors.append(not_supported(where.child("action") if "action" in raw else where, raw.get("action"), ACTIONS))
        return None
    scopes = tuple(raw.get("scopes") or SCOPES)
    bad = [s for s in scopes if s not in SCOPES]
    if bad:
        errors.append(not_supported(where.child("scopes"), bad[0], SCOPES))
        return None
    return Override(raw["action"], scopes)


def parse(raw: dict | None, errors: list[FieldError], known_rules: frozenset[str] = POLICY_RULES) -> Enforcement:
    """The config's `enforcement` (already checked by its schema for types)."""
    raw = raw or {}
    where = Path("enforcement")
    default = _override(raw.get("default", "deny"), where.child("default"), errors) or Override("deny")
    rules = []
    for rid, value in (raw.get("rules") or {}).items():
        if rid not in known_rules:
            errors.append(invalid(where.child("rules").key(rid), rid, "is not a rule id this service can relax "
                                  f"(one of {', '.join(sorted(known_rules))}); mirrors of kube-apiserver always deny"))
        elif (o := _override(value, where.child("rules").key(rid), errors)) is not None:
            rules.append((rid, o))
    targets = [(kind, o) for kind, value in (raw.get("targets") or {}).items()
               if (o := _override(value, where.child("targets").key(kind), errors)) is not None]
    namespaces = []
    for i, entry in enumerate(raw.get("namespaces") or []):
        sel = entry.get("selector") or {}
        o = _override({k: v for k, v in entry.items() if k != "selector"}, where.child("namespaces", i), errors)
        exprs = tuple((e["key"], e["operator"], tuple(e.get("values") or ())) for e in sel.get("matchExpressions") or [])
        if o is not None:
            namespaces.append(NamespaceRule(tuple(sorted((sel.get("matchLabels") or {}).items())), exprs, o))
    return Enforcement(default, tuple(rules), tuple(targets), tuple(namespaces))


def apply(verdict: Verdict, enforcement: Enforcement, kind: str, labels: Callable[[], dict | None],
          scope: str) -> Verdict:
    """The verdict as enforced: denied errors stay `errors`, warned ones move to
    `warned` (answered as warnings), audited ones to `audits` (an annotation)."""
    if not verdict.errors:
        return verdict
    by_action: dict[str, list[FieldError]] = {a: [] for a in ACTIONS}
    for e in verdict.errors:
        by_action[enforcement.action(e.rule, kind, labels, scope)].append(e)
    if not by_action["warn"] and not by_action["audit"]:
        return verdict
    return replace(verdict, errors=by_action["deny"], audits=by_action["audit"], warned=by_action["warn"])


def fails(action: str | None, threshold: str) -> bool:
    """`--fail-on`: a violation enforced at or above `threshold` fails a run (`never`: nothing does)."""
    return threshold != "never" and action is not None and RANK[action] <= RANK[threshold]


def annotation(errors: list[FieldError], limit: int = 8192) -> str:
    """The audit annotation's value: the audited violations as a JSON list."""
    entries = [{"rule": e.rule, "field": str(e.field), "message": e.body()[:512]} for e in errors]
    while entries:
        text = json.dumps(entries)
        if len(text) <= limit:
            return text
        entries = entries[: len(entries) // 2]      # fewer entries, still valid JSON
    return "[]"
