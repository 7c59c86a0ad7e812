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
from collections import OrderedDict
from typing import Callable

from webhook.cluster import api as api_mod
from webhook.view import ClusterUnavailable, Member, blocking, of_pod

MEMBER_LIMIT = 3          # members asked for: they agree with each other (or the scheduler fails them already)
MEMO_TTL = 30.0           # seconds a remembered member answers for its group
FAILURE_PAUSE = 5.0       # seconds a failed LIST is not repeated (the join is then not judged by it)
MEMO_SIZE = 4096          # groups remembered, least recently used dropped first
ACTIVE = "status.phase!=Succeeded,status.phase!=Failed"


class Members:
    """The members lookup of the ClusterCache: remembered answers, else one bounded LIST."""

    def __init__(self, api: api_mod.Api, timeout: float, clock: Callable[[], float] = time.monotonic):
        self.api, self.timeout, self.clock = api, timeout, clock
        self._memo: OrderedDict[tuple[str, str], tuple[float, Member | None]] = OrderedDict()
        self._lock = threading.Lock()

    def member(self, namespace: str, group: str, label: str, joining: Member,
               agrees: Callable[[Member, Member], bool]) -> tuple[Member | None, str]:
        """(a member of `group` to compare `joining` with or None, where the answer came from:
        cache | api | missing). Asks the API server only when nothing is remembered or what is
        remembered disagrees (`agrees`); a failed LIST is not asked again for FAILURE_PAUSE
        seconds (ClusterUnavailable at once, as a namespace's labels)."""
        key = (namespace, group)
        now = self.clock()
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None and hit[1] is None and now - hit[0] < FAILURE_PAUSE:
                raise ClusterUnavailable(f"members of {group!r} not listed (failed {now - hit[0]:.1f}s ago)")
            if hit is not None and hit[1] is not None and now - hit[0] < MEMO_TTL and agrees(hit[1], joining):
                self._memo.move_to_end(key)
                return hit[1], "cache"
        try:
            found = self._list(namespace, group, label)
        except ClusterUnavailable:
            self._remember(key, now, None)
            raise
        self._remember(key, now, found if found is not None else joining)
        return found, "api" if found is not None else "missing"

    def _remember(self, key: tuple[str, str], now: float, member: Member | None) -> None:
        with self._lock:
            self._memo[key] = (now, member)
            self._memo.move_to_end(key)
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)

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
