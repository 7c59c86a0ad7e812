"""The bytes of an answer: status line, Date (RFC 9110 §6.6.1: an origin server
with a clock sends it; formatted once a second), Content-Length, and
`Connection: close` when the connection ends after it. Every answer is one
write (webhook/server/connection.py)."""
from __future__ import annotations

import time
from email.utils import formatdate

from webhook.admission import review

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           413: "Content Too Large", 417: "Expectation Failed", 500: "Internal Server Error",
           501: "Not Implemented", 503: "Service Unavailable"}
STATUS_LINES = {code: f"HTTP/1.1 {code} {reason}".encode() for code, reason in REASONS.items()}
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
JSON = b"Content-Type: application/json"
CLOSE = b"Connection: close"

_date = [0, b""]


def date_line() -> bytes:
    now = int(time.time())
    if now != _date[0]:
        _date[0], _date[1] = now, b"Date: " + formatdate(now, usegmt=True).encode()
    return _date[1]


def encode(status: int | bytes, headers: list[bytes], payload: bytes, close: bool, length: bool = True) -> bytes:
    """`status` is a code, or the status line's "200 OK" part as a WSGI app gave it;
    `length`: False for the answer to HEAD, whose Content-Length is among `headers`."""
    line = STATUS_LINES.get(status) if isinstance(status, int) else None
    if line is None:
        line = b"HTTP/1.1 " + (status if isinstance(status, bytes) else str(status).encode())
    head = [line, date_line(), *headers]
    if length:
        head.append(b"Content-Length: %d" % len(payload))
    if close:
        head.append(CLOSE)
    return b"\r\n".join(head) + b"\r\n\r\n" + payload


def from_wsgi(status: str, headers: list[tuple[str, str]], data: bytes,
              head_only: bool) -> tuple[bytes, list[bytes], bytes, bool]:
    """A WSGI app's answer as (status, header lines, body, whether to add Content-Length):
    the framing is ours; the answer to HEAD has the length a GET would get, and no body."""
    lines = [f"{k}: {v}".encode("latin-1") for k, v in headers
             if k.lower() not in ("connection", "content-length", "date")]
    if head_only:
        length = next((v for k, v in headers if k.lower() == "content-length"), str(len(data)))
        lines.append(b"Content-Length: " + length.encode("latin-1"))
        data = b""
    return status.encode("latin-1"), lines, data, not head_only


def error(reason: str) -> bytes:
    """The one-line JSON body of a refusal."""
    return review.encode({"error": reason})
