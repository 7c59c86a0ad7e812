"""GANG-1..3: a joining Pod that kube-scheduler would fail its whole group for.

kube-scheduler v1.37.2 (`pkg/scheduler/schedule_one_podgroup.go`,
`validatePodGroup`) checks every Pod of a group hierarchy, queued or already
scheduled, before it places any, and on the first mismatch sets
`PodGroupInitiallyScheduled=False` reason `SchedulerError` on the group (every
leaf of a hierarchy) and places none:

- GANG-1: the Pod's priority (`spec.priority`, which the API server's Priority
  admission plugin resolved from `priorityClassName` before any webhook; unset
  is 0) against the root group's `spec.priority` (resolved the same way for a
  PodGroup and a CompositePodGroup; unset is 0);
- GANG-2: with the PodGroupPreemptionPolicy gate, the Pod's `preemptionPolicy`
  against the root group's (either unset: PreemptLowerPriority); without it,
  against the members' common one;
- GANG-3: the Pod's `schedulerName` against the members' (after BRG-4 hands a
  bridged scheduler's Pods to the default scheduler).

The root is the PodGroup, or with the CompositePodGroup gate the top of its
`parentCompositePodGroupName` chain (read from the view, only for groups that
have a parent). The members are one existing member of the Pod's own group
(the view's `member`: webhook/cluster/members.py); members of sibling groups in a
hierarchy are not looked up. A group or member the view cannot answer for is
not judged: the scheduler's condition still says it."""
from __future__ import annotations

from typing import Any

from webhook.foreign.dialects import DEFAULT_SCHEDULER
from webhook.config import Config
from webhook.field import FieldError, Path, by_rule, invalid
from webhook.view import ClusterUnavailable, ClusterView

PREEMPT_LOWER = "PreemptLowerPriority"
MAX_DEPTH = 4              # kube-apiserver's limit on a hierarchy ("maximum tree depth is 4")
GATE_POLICY, GATE_COMPOSITE = "PodGroupPreemptionPolicy", "CompositePodGroup"
PRIORITY, POLICY, SCHEDULER = Path("spec", "priority"), Path("spec", "preemptionPolicy"), Path("spec", "schedulerName")


def errors(pod: dict, podgroup: dict, group: str, namespace: str, cfg: Config, view: ClusterView) -> list[FieldError]:
    """The GANG-1..3 errors of `pod` joining PodGroup `group` (the view's object)."""
    spec = pod.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    gated = cfg.featureGates.get(GATE_POLICY, False)
    out: list[FieldError] = []
    policy = spec.get("preemptionPolicy") or (None if spec.get("priorityClassName") else PREEMPT_LOWER)
    rspec = podgroup.get("spec")
    rspec = rspec if isinstance(rspec, dict) else {}
    if rspec.get("parentCompositePodGroupName"):
        root_kind, root_name, root = _root(podgroup, group, namespace, cfg, view)
        rspec = root.get("spec") if isinstance(root, dict) else None
        rspec = rspec if isinstance(rspec, dict) else {}
    else:
        root_kind, root_name, root = "PodGroup", group, podgroup
    if root is not None:
        have, want = spec.get("priority"), rspec.get("priority")
        if have != want:
            have, want = _priority(spec), _priority(rspec)
        if have != want and have is not None and want is not None:                                 # GANG-1
            out += by_rule([invalid(PRIORITY, have, _said(
                f"all pods in a single pod group should have the same priority as the pod group's priority, "
                f"got {have} and {want}", root_kind, root_name, group,
                f"give the Pod the priority of {root_kind} {root_name!r}: "
                + (f"priorityClassName {rspec['priorityClassName']!r}" if rspec.get("priorityClassName")
                   else f"a priorityClassName whose value is {want}" if want else "no priorityClassName (priority 0)")
                + ", or create the group with the Pod's class"))], "GANG-1")
        want_p = (rspec.get("preemptionPolicy") or _known_policy(rspec)) if gated else None
        if want_p != policy and want_p is not None and policy is not None:                          # GANG-2
            out += by_rule([invalid(POLICY, policy, _said(
                f"all pods in a single pod group should have the same preemption policy as the pod group's "
                f"preemption policy, got {policy} and {want_p}", root_kind, root_name, group,
                f"give the Pod preemptionPolicy {want_p}, as {root_kind} {root_name!r} has "
                f"(a priorityClassName whose preemptionPolicy is {want_p}, or the field itself without a class)"))],
                "GANG-2")
    ask = getattr(view, "member", None)
    if ask is None:
        return out
    name = spec.get("schedulerName")
    if not isinstance(name, str) or not name or name in cfg.bridge.schedulerNames:
        name = _scheduler(spec, cfg)
    try:
        member = ask(namespace, group, cfg.groupLabel, name, None if gated else policy)
    except ClusterUnavailable:
        return out
    if member is None:
        return out
    if member.scheduler_name != name:                                                               # GANG-3
        out += by_rule([invalid(SCHEDULER, name, _said(
            f"all pods in a single pod group should have the same .spec.schedulerName set, got: "
            f'"{name}" and "{member.scheduler_name}"', "PodGroup", group, group,
            f"set spec.schedulerName: {member.scheduler_name} as the group's members have"))], "GANG-3")
    theirs = member.preemption_policy or PREEMPT_LOWER
    if not gated and policy is not None and theirs != policy:                                       # GANG-2
        out += by_rule([invalid(POLICY, policy, _said(
            f"all pods in a single pod group should have the same preemption policy, got {policy} and {theirs}",
            "PodGroup", group, group, f"give the Pod preemptionPolicy {theirs}, as the group's members have "
            f"(a priorityClassName whose preemptionPolicy is {theirs}, or the field itself without a class)"))],
            "GANG-2")
    return out


def _said(words: str, kind: str, name: str, group: str, change: str) -> str:
    whole = f"PodGroup {group!r}" if kind == "PodGroup" else f"PodGroup {group!r} (all of {kind} {name!r})"
    return (f"kube-scheduler would fail the whole {whole} with PodGroupInitiallyScheduled=False "
            f"reason SchedulerError: \"{words}\"; {change}")


def _root(podgroup: dict, group: str, namespace: str, cfg: Config, view: ClusterView) -> tuple[str, str, dict | None]:
    """(kind, name, object) of the group the scheduler takes priority and policy from: the
    PodGroup, or the top of its CompositePodGroup chain; object None when the view lacks one."""
    spec = podgroup.get("spec") if isinstance(podgroup.get("spec"), dict) else {}
    parent = spec.get("parentCompositePodGroupName")
    if not parent or not cfg.gate(GATE_COMPOSITE):
        return "PodGroup", group, podgroup
    ask = getattr(view, "compositepodgroup", None)
    if ask is None:
        return "PodGroup", group, None
    seen: set[str] = set()
    while isinstance(parent, str) and parent and parent not in seen and len(seen) < MAX_DEPTH:
        seen.add(parent)
        try:
            node = ask(namespace, parent)
        except ClusterUnavailable:
            return "CompositePodGroup", parent, None
        if not isinstance(node, dict):
            return "CompositePodGroup", parent, None
        name, nspec = parent, node.get("spec") if isinstance(node.get("spec"), dict) else {}
        parent = nspec.get("parentCompositePodGroupName")
        if not parent:
            return "CompositePodGroup", name, node
    return "CompositePodGroup", str(parent), None        # deeper than the API server allows, or a loop


def _priority(spec: dict) -> Any:
    """The priority the scheduler reads (unset: 0); None when not resolved yet (a class named
    but no value: only offline, the API server resolves it before any webhook)."""
    p = spec.get("priority")
    if p is None:
        return None if spec.get("priorityClassName") else 0
    return p


def _known_policy(spec: dict) -> Any:
    """The preemption policy the scheduler reads; None when not resolved yet (as _priority)."""
    p = spec.get("preemptionPolicy")
    if p is None:
        return None if spec.get("priorityClassName") else PREEMPT_LOWER
    return p


def _scheduler(spec: dict, cfg: Config) -> str:
    name = spec.get("schedulerName")
    if not isinstance(name, str) or not name:
        return DEFAULT_SCHEDULER                       # the API server's default
    return DEFAULT_SCHEDULER if cfg.bridge.schedulerNames and name in cfg.bridge.schedulerNames else name
