"""Judge every listed object with the engine (scope `audit`) and keep what a
summary and the reports need: counts per namespace, and the violations
(capped per namespace). Objects are judged as a CREATE of what is stored."""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from webhook import engine
from webhook.config import Config
from webhook.enforcement import RANK


# A policy report's result for each enforcement action.
RESULT = {"deny": "fail", "warn": "warn", "audit": "warn"}


@dataclass
class Violation:
    rule: str | None
    action: str
    field: str
    message: str


@dataclass
class Judged:
    """One object with violations (objects without are only counted)."""
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str
    violations: list[Violation]

    @property
    def action(self) -> str:
        return min((v.action for v in self.violations), key=RANK.__getitem__)


@dataclass
class AuditOutcome:
    objects: int = 0
    passed: Counter = field(default_factory=Counter)               # namespace -> objects without violations
    found: dict[str, list[Judged]] = field(default_factory=lambda: defaultdict(list))   # namespace -> judged
    dropped: Counter = field(default_factory=Counter)              # namespace -> results over the cap
    tally: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))   # namespace -> fail/warn results
    namespaces: set[str] = field(default_factory=set)              # every namespace seen ("" = cluster scope)
    by_rule: Counter = field(default_factory=Counter)              # (rule, action) -> violations
    objects_by_rule: Counter = field(default_factory=Counter)      # (rule, action) -> objects
    skipped: list[str] = field(default_factory=list)

    def worst(self) -> str | None:
        """The strictest action of any violation, listed or over the cap."""
        actions = {action for _, action in self.by_rule}
        return min(actions, key=RANK.__getitem__) if actions else None

    @property
    def violating(self) -> int:
        """Objects with at least one violation, listed or not."""
        return self.objects - sum(self.passed.values())


def judge_all(objects, cfg: Config, view, max_results: int) -> AuditOutcome:
    out = AuditOutcome()
    for obj in objects:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or ""
        out.objects += 1
        out.namespaces.add(ns)
        verdict = engine.validate(engine.Request.for_object(obj), cfg, view, scope="audit")
        violations = [Violation(e.rule, action, str(e.field), e.body())
                      for action, errors in (("deny", verdict.errors), ("warn", verdict.warned), ("audit", verdict.audits))
                      for e in errors]
        if not violations:
            out.passed[ns] += 1
            continue
        for key in {(v.rule or "mirror", v.action) for v in violations}:
            out.objects_by_rule[key] += 1
        for v in violations:
            out.by_rule[(v.rule or "mirror", v.action)] += 1
            out.tally[ns][RESULT[v.action]] += 1
        judged = Judged(str(obj.get("apiVersion")), str(obj.get("kind")), ns, str(meta.get("name") or ""),
                        str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""), violations)
        if sum(len(j.violations) for j in out.found[ns]) >= max_results:
            out.dropped[ns] += len(violations)
        else:
            out.found[ns].append(judged)
    return out
