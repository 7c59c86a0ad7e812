"""The times by which a connection (webhook/server/connection.py) must have
moved on, and its one timer. Moving a deadline later costs a float; the timer
is re-armed only when a deadline comes nearer, and when it fires early the
connection re-arms it for the deadline that holds now."""
from __future__ import annotations

import asyncio
from typing import Callable


class Deadlines:
    __slots__ = ("loop", "callback", "idle", "byte", "body", "wait", "write", "linger", "_timer", "_at")

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]):
        self.loop, self.callback = loop, callback
        self.idle = loop.time()     # the next request head, kept-alive idle time included
        self.byte = 0.0             # the next body byte
        self.body = 0.0             # the body's last byte
        self.wait = 0.0             # the end of a wait for the body budget
        self.write = 0.0            # the client reads what it was sent
        self.linger = 0.0           # the end of a lingering close
        self._timer = None
        self._at = 0.0

    def wake_at(self, when: float) -> None:
        if self._timer is None or when < self._at:
            if self._timer is not None:
                self._timer.cancel()
            self._at = when
            self._timer = self.loop.call_at(when, self._fired)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fired(self) -> None:
        self._timer = None
        self.callback()
