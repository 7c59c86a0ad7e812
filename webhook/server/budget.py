"""The request-body bytes one worker holds at once (`server.bodyBudgetBytes`),
shared by all its connections: the bound that keeps a worker's memory
independent of what clients send.

A body claims its size before it is read: its Content-Length, or
`server.maxBodyBytes` for a chunked body (given back down to its real size
once read). A claim that does not fit waits, and its connection stops
reading: back-pressure, not an error, so the sender's bytes stay in its own
buffers. A claim is all or nothing, so every body being read can finish
(none waits for bytes another holds), and the budget is at least
maxBodyBytes (webhook/config.py), so every claim fits once the holders are
done; holders are bounded by `server.bodyTimeoutSeconds`.

Waiters are granted in arrival order, and a later one that fits passes an
earlier one that does not: a 5 KiB Pod is not held behind 7 MiB bodies that
someone else trickles. A large body can thus wait while smaller ones pass;
it waits at most `server.idleTimeoutSeconds` (then 503, connection.py), and
the bytes it needs come back as the bodies ahead finish or time out."""
from __future__ import annotations

from collections import deque
from typing import Protocol


class Waiter(Protocol):
    def budget_granted(self) -> None: ...


class BodyBudget:
    __slots__ = ("total", "held", "_queue")

    def __init__(self, total: int):
        self.total, self.held = total, 0
        self._queue: deque[tuple[Waiter, int]] = deque()      # in arrival order

    @property
    def waiting(self) -> int:
        return len(self._queue)

    def take(self, size: int) -> bool:
        """Claim `size` bytes now; False when it must wait (then call `wait`). The
        waiters are those that do not fit, so one that fits now passes them."""
        if size <= self.total - self.held:
            self.held += size
            return True
        return False

    def wait(self, waiter: Waiter, size: int) -> None:
        """Queue a claim that did not fit; `waiter.budget_granted()` is called once it holds `size`."""
        self._queue.append((waiter, size))
        self._grant()

    def forget(self, waiter: Waiter) -> None:
        """The waiter needs its claim no more (its connection closed, its body came whole)."""
        for entry in self._queue:
            if entry[0] is waiter:
                self._queue.remove(entry)
                self._grant()
                return

    def give_back(self, size: int) -> None:
        self.held -= size
        if self._queue:
            self._grant()

    def _grant(self) -> None:
        granted = []
        for entry in list(self._queue):
            waiter, size = entry
            if size <= self.total - self.held:
                self.held += size
                self._queue.remove(entry)
                granted.append(waiter)
        for waiter in granted:          # after the queue is settled: a grant may give bytes back at once
            waiter.budget_granted()
