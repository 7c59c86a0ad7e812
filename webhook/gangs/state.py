"""A gang's state, a pure function of its PodGroup and its member Pods (webhook/gangs/store.py
keeps both), decided from data only: phases, nodes, deletion and the condition kube-scheduler
writes, `PodGroupInitiallyScheduled` (reason `Unschedulable` or `SchedulerError` while False;
True once the whole gang was placed, and terminal: it never reverts, even when members are
lost later). Never from message text.

    waiting_for_members   fewer than minCount members exist (kube-scheduler keeps the gang in
                          PreEnqueue and says nothing)
    waiting_for_capacity  minCount exist, not all placed: the scheduler's reason
    scheduled             placed: the condition is True, or minCount members are bound
    degraded              placed once, now fewer than minCount on a node (running, starting) or done
    finished              no member left active, minCount of them succeeded
    failed                the scheduler failed the whole group (SchedulerError), or no member
                          left active and fewer than minCount succeeded

The same function answers the model (webhook/gangs/model.py) and `explain`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

WAITING_FOR_MEMBERS = "waiting_for_members"
WAITING_FOR_CAPACITY = "waiting_for_capacity"
SCHEDULED = "scheduled"
DEGRADED = "degraded"
FINISHED = "finished"
FAILED = "failed"
STATES = (WAITING_FOR_MEMBERS, WAITING_FOR_CAPACITY, SCHEDULED, DEGRADED, FINISHED, FAILED)
WAITING = (WAITING_FOR_MEMBERS, WAITING_FOR_CAPACITY)

CONDITION = "PodGroupInitiallyScheduled"
SCHEDULER_ERROR = "SchedulerError"
ACTIVE_PHASES = ("Pending", "Running", "Unknown", "")

#: the Event reason for each state (a CamelCase word, as Kubernetes' reasons are)
REASONS = {WAITING_FOR_MEMBERS: "GangWaitingForMembers", WAITING_FOR_CAPACITY: "GangWaitingForCapacity",
           SCHEDULED: "GangScheduled", DEGRADED: "GangDegraded", FINISHED: "GangFinished", FAILED: "GangFailed"}
WARNINGS = frozenset((DEGRADED, FAILED))


@dataclass(frozen=True, slots=True)
class GangGroup:
    """What the model keeps of a PodGroup with a gang policy."""
    min_count: int
    created: float = 0.0            # creationTimestamp, Unix seconds
    condition: str = ""             # PodGroupInitiallyScheduled status: "True", "False" or "" (none yet)
    reason: str = ""                # its reason
    deleting: bool = False
    uid: str = ""                   # for the Events' `regarding`


@dataclass(frozen=True, slots=True)
class GangMember:
    """What the model keeps of a member Pod."""
    phase: str = "Pending"
    node: str = ""                  # spec.nodeName: bound when set
    reason: str = ""                # its PodScheduled condition's reason while False (Unschedulable, ...)
    deleting: bool = False


@dataclass(frozen=True, slots=True)
class Counts:
    exist: int = 0                  # members not being deleted
    bound: int = 0                  # of those, bound to a node and still active
    running: int = 0
    succeeded: int = 0
    failed: int = 0

    @property
    def active(self) -> int:
        return self.exist - self.succeeded - self.failed


@dataclass(frozen=True, slots=True)
class Status:
    state: str
    counts: Counts
    min_count: int
    reason: str = ""                # the scheduler's reason (waiting for capacity, failed)

    def line(self) -> str:
        """One line for an Event's note and explain: the state, the counts, the reason."""
        c, m = self.counts, self.min_count
        if self.state == WAITING_FOR_MEMBERS:
            return f"waiting for members {c.exist}/{m}"
        if self.state == WAITING_FOR_CAPACITY:
            why = f": {self.reason}" if self.reason else ""
            return f"waiting for capacity{why} ({c.bound}/{m} bound, {c.exist} exist)"
        if self.state == SCHEDULED:
            return f"scheduled ({c.bound}/{m} bound, {c.running} running)"
        if self.state == DEGRADED:
            return f"degraded: {c.bound + c.succeeded}/{m} on a node or done after it was scheduled " \
                   f"({c.exist} exist, {c.running} running, {c.failed} failed)"
        if self.state == FINISHED:
            return f"finished ({c.succeeded}/{m} succeeded)"
        why = f": {self.reason}" if self.reason else ""
        return f"failed{why} ({c.succeeded}/{m} succeeded, {c.failed} failed)"

    def key(self) -> tuple:
        """What an Event says: a new Event when this changes (the counts only while waiting for members)."""
        return (self.state, self.reason, self.counts.exist if self.state == WAITING_FOR_MEMBERS else None)


def count(members: Iterable[GangMember]) -> Counts:
    exist = bound = running = succeeded = failed = 0
    for m in members:
        if m.deleting:
            continue
        exist += 1
        if m.phase == "Succeeded":
            succeeded += 1
        elif m.phase == "Failed":
            failed += 1
        else:
            bound += bool(m.node)
            running += m.phase == "Running"
    return Counts(exist, bound, running, succeeded, failed)


def capacity_reason(group: GangGroup, members: Iterable[GangMember]) -> str:
    """The scheduler's reason a placeable gang waits: its PodGroup condition's, else the most
    common reason of the members' PodScheduled conditions."""
    if group.condition == "False" and group.reason:
        return group.reason
    seen: dict[str, int] = {}
    for m in members:
        if m.reason and not m.deleting and not m.node:
            seen[m.reason] = seen.get(m.reason, 0) + 1
    return max(sorted(seen), key=seen.__getitem__) if seen else ""


def state(group: GangGroup, members: Iterable[GangMember], was_scheduled: bool = False) -> Status:
    """The gang's state now. `was_scheduled`: the model saw it scheduled before (the condition
    says so too once kube-scheduler wrote it)."""
    members = tuple(members)
    c, m = count(members), max(1, group.min_count)
    placed = was_scheduled or group.condition == "True"
    if group.condition == "False" and group.reason == SCHEDULER_ERROR and not placed:
        return Status(FAILED, c, m, SCHEDULER_ERROR)
    if c.active == 0 and (c.succeeded or c.failed):
        if c.succeeded >= m:
            return Status(FINISHED, c, m)
        if placed or c.failed:
            return Status(FAILED, c, m)
    if placed:
        return Status(SCHEDULED if c.bound + c.succeeded >= m else DEGRADED, c, m)
    if c.exist < m:
        return Status(WAITING_FOR_MEMBERS, c, m)
    if c.bound >= m:
        return Status(SCHEDULED, c, m)
    return Status(WAITING_FOR_CAPACITY, c, m, capacity_reason(group, members))


def placed(status: Status) -> bool:
    """The gang was placed as a whole (what `was_scheduled` remembers)."""
    return status.state in (SCHEDULED, DEGRADED, FINISHED)
