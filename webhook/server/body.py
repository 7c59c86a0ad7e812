"""Reading an admission request's body within the size limit.

Every object kube-apiserver can store must fit: the default limit holds two
objects at its 3 MiB request limit (object and oldObject of an UPDATE) plus the
AdmissionReview envelope. A body over the limit is read and dropped (up to
DRAIN_FACTOR times the limit) before the 413 is sent, so a client that is still
sending can read the answer instead of a reset connection."""
from __future__ import annotations

from typing import BinaryIO

from gunicorn.http.errors import ParseException

CHUNK = 256 * 1024
DRAIN_FACTOR = 4


class TooLarge(Exception):
    """The body is over the limit; `drained` tells whether all of it was read."""

    def __init__(self, drained: bool):
        super().__init__("too large")
        self.drained = drained


class Unreadable(Exception):
    """The body could not be read: a malformed chunked encoding, a client that
    stopped sending or went away. `reason` is one line."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def read(stream: BinaryIO, declared: int | None, limit: int) -> bytes:
    """The whole body, at most `limit` bytes; raises TooLarge or Unreadable."""
    try:
        if declared is not None and declared > limit:
            raise TooLarge(_drain(stream, DRAIN_FACTOR * limit))
        body = stream.read(limit + 1) if declared is None else stream.read(declared)
        if len(body) > limit:
            raise TooLarge(_drain(stream, DRAIN_FACTOR * limit))
        if declared is not None and len(body) < declared:
            raise Unreadable(f"request body ended after {len(body)} of {declared} bytes")
        return body
    except (OSError, ParseException) as exc:   # bad chunk sizes and terminators, NoMoreData, timeouts, resets
        text = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise Unreadable(f"request body could not be read: {text}") from None


def _drain(stream: BinaryIO, budget: int) -> bool:
    """Read and drop up to `budget` bytes; True when the body ended within it."""
    total = 0
    while total <= budget:
        chunk = stream.read(CHUNK)
        if not chunk:
            return True
        total += len(chunk)
    return False
