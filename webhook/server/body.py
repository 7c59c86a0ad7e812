"""A request's body, collected within the size limit as the parser hands it
over (chunked bodies arrive decoded).

Every object kube-apiserver can store must fit: the default limit holds two
objects at its 3 MiB request limit (object and oldObject of an UPDATE) plus the
AdmissionReview envelope. A body over the limit is read and dropped (up to
DRAIN_FACTOR times the limit) before the 413 is sent, so a client that is still
sending can read the answer instead of a reset connection; the 413 is the
reader's refusal (webhook/server/reader.py), like every refusal of the HTTP
layer."""
from __future__ import annotations

DRAIN_FACTOR = 4


class Body:
    """The parts of one body; past the limit only their count of bytes."""

    __slots__ = ("limit", "size", "parts", "over")

    def __init__(self, limit: int, declared: int | None):
        self.limit, self.size, self.parts = limit, 0, []
        self.over = declared is not None and declared > limit

    def feed(self, data: bytes) -> bool:
        """Take a part; False once more than DRAIN_FACTOR × the limit came (stop reading)."""
        self.size += len(data)
        if not self.over:
            if self.size > self.limit:
                self.over, self.parts = True, []
            else:
                self.parts.append(data)
        return self.size <= DRAIN_FACTOR * self.limit

    def result(self) -> bytes:
        """The whole body (of one within the limit: `over` is False)."""
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
