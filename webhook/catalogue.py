"""The rule ids of docs/rules.md as data: which objects each rule judges and
whether it is one of this service's own policy rules (the only ones
`enforcement` may relax). The metrics count violations by these ids, and
create every (rule, kind, operation, action) series that can occur at zero
from start-up (webhook/server/series.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

# Where a rule judges: the building blocks (wherever they appear), one core kind,
# the core kinds, configured CRD targets, one operator's targets (by kind), Pods.
BLOCKS, CORE, TARGET, POD = "blocks", "core", "target", "Pod"
BRIDGE = "bridge"      # Pods named by a foreign PodGroup's key, with the bridge on (docs/bridge.md)
NONE = "none"          # the metric's rule label of an error that names no rule
ACTIONS = ("deny", "warn", "audit")          # strictest first


@dataclass(frozen=True)
class Rule:
    id: str
    scope: str                 # BLOCKS, CORE, TARGET, POD, or a kind (Workload, PodGroup, JobSet, ...)
    own: bool = False          # an own policy rule: enforcement may make it warn or audit
    violates: bool = True      # False: the rule only mutates or describes the protocol


def _ids(prefix: str, first: int, last: int, scope: str, **kw) -> tuple[Rule, ...]:
    return tuple(Rule(f"{prefix}-{i}", scope, **kw) for i in range(first, last + 1))


RULES: tuple[Rule, ...] = (
    Rule("POL-1", BLOCKS), Rule("POL-2", BLOCKS), Rule("POL-3", BLOCKS, own=True), Rule("POL-4", BLOCKS),
    Rule("DIS-1", BLOCKS), Rule("DIS-2", BLOCKS, own=True), Rule("DIS-3", BLOCKS),
    Rule("CON-1", BLOCKS, own=True),        # own for its limits.allowedTopologyKeys part
    Rule("CLM-1", BLOCKS), Rule("CMP-1", BLOCKS),
    Rule("WL-1", "Workload"), Rule("WL-2", CORE),
    Rule("PG-1", "PodGroup"), Rule("PG-2", "PodGroup", own=True),
    Rule("TGT-1", TARGET, violates=False),  # the blocks' own ids report what breaks at a configured path
    Rule("TGT-2", TARGET), Rule("TGT-3", TARGET, violates=False),
    *_ids("TGT", 4, 11, TARGET, own=True),
    *_ids("JS", 1, 6, "JobSet"), *_ids("LWS", 1, 6, "LeaderWorkerSet"),
    Rule("DEF-1", TARGET, violates=False),
    Rule("DEF-2", "Job", violates=False),   # gang by default: Jobs and the named targets (a mutation, warnings only)
    Rule("POD-1", POD, own=True), Rule("POD-2", POD, violates=False), Rule("POD-3", POD, own=True),
    Rule("POD-4", POD, own=True), Rule("POD-5", POD, own=True),
    *_ids("POD", 6, 8, POD, violates=False),
    *_ids("GANG", 1, 3, POD, own=True),       # what kube-scheduler fails a whole group for (rules/gang_members.py)
    *_ids("ADM", 1, 7, "protocol", violates=False),
    Rule("BRG-1", BRIDGE, violates=False),    # warnings on foreign PodGroups
    Rule("BRG-2", BRIDGE, own=True), Rule("BRG-3", BRIDGE, own=True),
    *_ids("BRG", 4, 6, BRIDGE, violates=False),
)
IDS = frozenset(r.id for r in RULES)
OWN_POLICY = frozenset(r.id for r in RULES if r.own)


def scopes(kind: str, target: bool, bridge: bool = False) -> frozenset[str]:
    """Where a request for `kind` is judged: a core kind, a Pod (and the bridge's Pods), or a target."""
    if kind == POD:
        return frozenset({POD, BRIDGE}) if bridge else frozenset({POD})
    if target:
        return frozenset({BLOCKS, TARGET, kind})
    return frozenset({BLOCKS, CORE, kind})


def violation_labels(judged: Iterable[tuple[str, bool, tuple[str, ...]]],
                     bridge: bool = False) -> Iterator[tuple[str, str, str, str]]:
    """(rule, kind, operation, action) for each (kind, is a target, operations) judged:
    every rule that can break there, each action it can have (deny; warn and audit for
    own policy rules), and `none` denied for an error that names no rule."""
    for kind, target, operations in judged:
        where = scopes(kind, target, bridge)
        for op in operations:
            for rule in RULES:
                if rule.violates and rule.scope in where:
                    for action in ACTIONS if rule.own else ACTIONS[:1]:
                        yield rule.id, kind, op, action
            yield NONE, kind, op, "deny"
