"""One existing member of a pod group, for the gang rules (GANG-2 without the
PodGroupPreemptionPolicy gate, GANG-3): its `spec.schedulerName` and
`spec.preemptionPolicy`, which kube-scheduler requires every member to share.

The cheapest honest way, and why:

- A LIST of the group's Pods by the group label the join itself sets (POD-2),
  `limit` MEMBER_LIMIT, without terminated Pods (the scheduler does not see
  them either): one small read from the API server's watch cache, declared
  `@blocking` (webhook/view.py), so the event loop never waits for it.
- Remembered per group for MEMO_TTL seconds (at most MEMO_SIZE groups): a Pod
  that agrees with what was remembered is judged without asking. What is
  remembered only ever saves a LIST; it never refuses alone: a Pod that
  differs from it is judged by a fresh LIST. When the LIST finds no member,
  the joining Pod's own values are remembered (the group's first member).
- Not an annotation on the PodGroup written by the first join: admission would
  then write to the API server (side effects on dry runs, a second writer of
  the user's object, a race between first members all the same).

What this cannot see: members joined within the same moment through another
worker or replica (two first members racing), and within MEMO_TTL a group
whose members were all replaced by Pods of another scheduler through another
replica. The scheduler's SchedulerError on the PodGroup still says those."""
from __future__ import annotations

import threading
import time
from typing import Callable

from webhook.cluster import api as api_mod
from webhook.view import ClusterUnavailable, Member, blocking, of_pod

MEMBER_LIMIT = 3          # members asked for: they agree with each other (or the scheduler fails them already)
MEMO_TTL = 30.0           # seconds a remembered member answers for its group
FAILURE_PAUSE = 5.0       # seconds a failed LIST is not repeated (the join is then not judged by it)
MEMO_SIZE = 4096          # groups remembered, the oldest answer dropped first
PREEMPT_LOWER = "PreemptLowerPriority"
ACTIVE = "status.phase!=Succeeded,status.phase!=Failed"


class Members:
    """The members lookup of the ClusterCache: remembered answers, else one bounded LIST."""

    def __init__(self, api: api_mod.Api, timeout: float, clock: Callable[[], float] = time.monotonic):
        self.api, self.timeout, self.clock = api, timeout, clock
        # (namespace, group) -> (when, the member; None: the LIST failed). Read without the lock
        # (one dict lookup, atomic); written under it, the oldest dropped first past MEMO_SIZE.
        self._memo: dict[tuple[str, str], tuple[float, Member | None]] = {}
        self._lock = threading.Lock()

    def member(self, namespace: str, group: str, label: str, scheduler_name: str,
               policy: str | None) -> tuple[Member | None, str]:
        """(a member of `group` to compare a joining Pod with, or None; where the answer came
        from: cache | api | missing). Answered from memory when what is remembered agrees with
        the Pod's `scheduler_name` and (not None) `policy` (unset: PreemptLowerPriority), else
        from one LIST; a failed LIST is not asked again for FAILURE_PAUSE seconds
        (ClusterUnavailable at once, as a namespace's labels)."""
        key = (namespace, group)
        now = self.clock()
        hit = self._memo.get(key)
        if hit is not None:
            when, remembered = hit
            if remembered is None:
                if now - when < FAILURE_PAUSE:
                    raise ClusterUnavailable(f"members of {group!r} not listed (failed {now - when:.1f}s ago)")
            elif now - when < MEMO_TTL and remembered.scheduler_name == scheduler_name and (
                    policy is None or (remembered.preemption_policy or PREEMPT_LOWER) == policy):
                return remembered, "cache"
        try:
            found = self._list(namespace, group, label)
        except ClusterUnavailable:
            self._remember(key, now, None)
            raise
        self._remember(key, now, found if found is not None else Member(scheduler_name, policy))
        return found, "api" if found is not None else "missing"

    def _remember(self, key: tuple[str, str], now: float, member: Member | None) -> None:
        with self._lock:
            self._memo.pop(key, None)
            self._memo[key] = (now, member)
            while len(self._memo) > MEMO_SIZE:
                del self._memo[next(iter(self._memo))]

    @blocking
    def _list(self, namespace: str, group: str, label: str) -> Member | None:
        query = {"labelSelector": f"{label}={group}", "fieldSelector": ACTIVE, "limit": MEMBER_LIMIT}
        try:
            reply = self.api.send("GET", api_mod.path("", "v1", "pods", namespace), query, timeout=self.timeout)
            body = reply.read()
        except Exception as exc:
            raise ClusterUnavailable(f"members of {group!r} not listed ({type(exc).__name__})") from None
        if reply.status != 200:
            raise ClusterUnavailable(f"members of {group!r} not listed: API server answered "
                                     f"{reply.status} {reply.reason}")
        items = [p for p in api_mod.decode(body).get("items") or [] if isinstance(p, dict)]
        return of_pod(items[0]) if items else None        # a member being deleted still counts, as upstream
