"""One request as a connection reads it (webhook/server/connection.py): its
phase, what its head says, and the rules of RFC 9112 and RFC 9110 its head
must meet before its body is read. No I/O here.

llhttp (httptools) already refuses what it cannot frame: Content-Length and
Transfer-Encoding together, a duplicate or malformed Content-Length, chunked
followed by another coding, obsolete line folding, bare LF. What it lets through
and this module refuses is the rest of the head's rules: among them a
Transfer-Encoding whose last coding is not chunked (RFC 9112 §6.3: the body's
length cannot be known, 400 and close) and a coding other than chunked before
it (§6.1: 501)."""
from __future__ import annotations

import enum
import ipaddress
import re
from typing import Callable, NamedTuple

import httptools

from webhook.server.body import Body

LINE_LIMIT = 8190
FIELDS_LIMIT = 100
HEAD_LIMIT = 64 * 1024          # the head, and the trailer section with it (RFC 9112 §7.1.2)
# "<method> <target> HTTP/1.1\r\n" and the blank line: what a head costs beyond its parts.
HEAD_FRAMING = len(b"  HTTP/1.1\r\n\r\n")
FIELD_FRAMING = len(b": \r\n")

# RFC 9112 §3.2 / RFC 3986 §3.2.2: Host = uri-host [ ":" port ].
_HOST = re.compile(rb"(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|\[v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+\]"
                   rb"|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?")
OWS = b" \t"
# The fields the head's rules read, by lower-case name.
_LENGTH, _TYPE, _HOST_FIELD, _CODING, _EXPECT = range(5)
_READ = {b"content-length": _LENGTH, b"content-type": _TYPE, b"host": _HOST_FIELD,
         b"transfer-encoding": _CODING, b"expect": _EXPECT}
# Host values judged lately (kube-apiserver sends the same one on every call): value -> problem.
_HOSTS_SEEN: dict[bytes, str | None] = {}
_HOSTS_KEPT = 64


class Phase(enum.Enum):
    HEAD = "head"                # the request line and header fields are arriving
    WAITING = "waiting"          # the head is read; the body waits for its share of the worker's budget
    BODY = "body"                # the body is arriving, within server.bodyTimeoutSeconds
    READY = "ready"              # read whole (or refused): waits for its turn to be answered
    ANSWERING = "answering"      # judged in the worker's lookup pool


class Refusal(NamedTuple):
    status: int
    reason: str                  # one line: the answer's {"error": ...}
    why: str                     # the label of workload_webhook_http_refused_total


class HttpRequest:
    __slots__ = ("phase", "method", "url", "path", "query", "version", "headers", "head_size", "fields", "hosts",
                 "content_type", "declared", "coding", "expect", "keep_alive", "body", "content", "held", "refusal",
                 "framing", "trailer_size", "continue_due")

    def __init__(self):
        self.phase = Phase.HEAD
        self.method = b""
        self.url = b""
        self.path = self.query = ""
        self.version = "1.1"
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_size = HEAD_FRAMING
        self.fields = 0
        self.hosts: list[bytes] = []
        self.content_type: str | None = None
        self.declared: int | None = None       # Content-Length
        self.coding: bytes | None = None       # Transfer-Encoding, lower case
        self.expect: bytes | None = None
        self.keep_alive = True
        self.body: Body | None = None           # while it is read
        self.content: bytes | None = None      # once read whole: the body
        self.held = 0                          # bytes of the worker's body budget this request holds
        self.refusal: Refusal | None = None
        self.framing = 0                       # chunked framing (and trailer) bytes since the last body byte
        self.trailer_size = 0
        self.continue_due = False              # an HTTP/1.1 client waits for 100 Continue

    # -- the head, as the parser hands it over --------------------------------

    def add_url(self, part: bytes) -> Refusal | None:
        self.url += part
        self.head_size += len(part)
        if len(self.url) > LINE_LIMIT:
            return Refusal(400, f"request line is longer than {LINE_LIMIT} bytes", "head_too_large")
        return None

    def add_field(self, name: bytes, value: bytes) -> Refusal | None:
        self.headers.append((name, value))
        self.fields += 1
        self.head_size += len(name) + len(value) + FIELD_FRAMING
        if self.fields > FIELDS_LIMIT:
            return Refusal(400, f"more than {FIELDS_LIMIT} header fields", "head_too_large")
        kind = _READ.get(name.lower())
        if kind is None:
            return None
        if kind == _LENGTH:
            try:
                self.declared = int(value)      # llhttp has checked it: digits, one value
            except ValueError:
                return Refusal(400, "malformed Content-Length", "framing")
        elif kind == _TYPE:
            self.content_type = value.strip(OWS).decode("latin-1")
        elif kind == _HOST_FIELD:
            self.hosts.append(value.strip(OWS))
        elif kind == _CODING:          # field lines combine into one list (RFC 9110 §5.3)
            value = value.strip(OWS).lower()
            self.coding = value if self.coding is None else self.coding + b", " + value
        else:
            self.expect = value.strip(OWS).lower()
        return None

    def add_trailer(self, name: bytes, value: bytes) -> Refusal | None:
        """A trailer field is counted with the head and dropped: never merged into the
        header fields (RFC 9110 §6.5.1), and nothing here needs one."""
        self.fields += 1
        self.trailer_size += len(name) + len(value) + FIELD_FRAMING
        return self.trailer_refusal()

    def trailer_refusal(self) -> Refusal | None:
        if self.head_size + max(self.trailer_size, self.framing) > HEAD_LIMIT or self.fields > FIELDS_LIMIT:
            return Refusal(400, f"request head and trailer section are larger than {HEAD_LIMIT} bytes "
                                f"or {FIELDS_LIMIT} fields", "trailers_too_large")
        return None

    def head_refusal(self, version_of: Callable[[], str], upgrade: bool) -> Refusal | None:
        """The rules of a complete head, in the order a reader of the RFCs would check them.
        `version_of` gives "1.1" or "1.0": asked only when a rule depends on it (it costs
        a third of the rest, and a kube-apiserver call needs none of them)."""
        self.head_size += len(self.method)
        if upgrade:
            return Refusal(400, "protocol upgrades are not supported", "upgrade")
        if self.head_size > HEAD_LIMIT:
            return Refusal(400, f"request head is larger than {HEAD_LIMIT} bytes", "head_too_large")
        try:
            target = httptools.parse_url(self.url)
        except httptools.HttpParserInvalidURLError:
            return Refusal(400, "malformed request target", "malformed")
        self.path = target.path.decode("latin-1")
        self.query = (target.query or b"").decode("latin-1")
        version = self.version = version_of() if not self.hosts or self.coding or self.expect else "1.1"
        if (problem := host_problem(self.hosts, version)) is not None:
            return Refusal(400, problem, "host")
        if self.coding is not None:
            if version == "1.0":        # RFC 9112 §6.1: the framing of such a message is faulty
                return Refusal(400, "Transfer-Encoding in an HTTP/1.0 request", "framing")
            if (refusal := coding_refusal(self.coding)) is not None:
                return refusal
        if self.expect is not None and version != "1.0":
            if self.expect != b"100-continue":
                return Refusal(417, f"expectation {self.expect.decode('latin-1')[:40]!r} is not supported",
                               "expectation")
            self.continue_due = True    # RFC 9110 §10.1.1: an HTTP/1.0 client's expectation is ignored
        return None

    def claim(self, limit: int) -> int:
        """The body bytes to claim from the worker's budget before reading the body."""
        if self.coding is not None:
            return limit                # chunked: its size is known at its end
        if self.declared is None or self.declared > limit:
            return 0                    # no body (RFC 9112 §6.3), or one read and dropped (413)
        return self.declared

    def refuse(self, refusal: Refusal) -> None:
        if self.refusal is None:
            self.refusal = refusal
        self.phase = Phase.READY
        self.body = self.content = None


def coding_refusal(coding: bytes) -> Refusal | None:
    """A Transfer-Encoding list (lower case) that is not just `chunked`: 400 when chunked is
    not its last coding (RFC 9112 §6.3: the length of the body cannot be determined, so the
    connection closes after the answer), 501 for a coding before it (§6.1: none is supported)."""
    if coding == b"chunked":
        return None
    codings = [c.split(b";", 1)[0].strip(OWS) for c in coding.split(b",")]
    codings = [c for c in codings if c]         # empty list elements do not count (RFC 9110 §5.6.1)
    shown = coding.decode("latin-1")[:40]
    if not codings or codings[-1] != b"chunked":
        return Refusal(400, f"Transfer-Encoding {shown!r} does not end in chunked: the body's length "
                            "cannot be determined", "transfer_coding")
    if len(codings) == 1:                       # chunked as llhttp does not frame it: with parameters, say
        return Refusal(400, f"malformed Transfer-Encoding {shown!r}", "transfer_coding")
    return Refusal(501, f"transfer coding {shown!r} is not supported (only chunked)", "transfer_coding")


def too_large(limit: int) -> Refusal:
    return Refusal(413, f"request body is larger than {limit} bytes (server.maxBodyBytes)", "body_too_large")


def late(what: str, idle: float, body_timeout: float, slack: float) -> Refusal:
    """The refusal of a request whose `what` ("head", "wait", "body", "byte") did not come in time."""
    if what == "head":
        return Refusal(408, f"request head not complete within {idle:g} s (server.idleTimeoutSeconds)",
                       "head_timeout")
    if what == "wait":
        return Refusal(503, f"busy: request bodies fill server.bodyBudgetBytes; waited {idle:g} s", "busy")
    if what == "body":
        return Refusal(408, f"request body not complete within {body_timeout:g} s (server.bodyTimeoutSeconds)",
                       "body_timeout")
    return Refusal(408, f"no request body byte for {idle + slack:g} s", "body_timeout")


def host_problem(hosts: list[bytes], version: str) -> str | None:
    """RFC 9112 §3.2: a 400 for an HTTP/1.1 request without Host, for any request with
    more than one Host, and for a Host that is not uri-host [":" port]."""
    if not hosts:
        return "the Host header field is missing" if version != "1.0" else None
    if len(hosts) > 1:
        return "more than one Host header field"
    host = hosts[0]
    try:
        return _HOSTS_SEEN[host]
    except KeyError:
        pass
    match = _HOST.fullmatch(host)
    problem = None
    if match is None or (match.group("ip6") and not _ipv6(match.group("ip6"))):
        problem = f"the Host header field is not a valid host[:port]: {host[:60].decode('latin-1')!r}"
    if len(host) <= 256:
        if len(_HOSTS_SEEN) >= _HOSTS_KEPT:
            _HOSTS_SEEN.clear()
        _HOSTS_SEEN[host] = problem
    return problem


def _ipv6(text: bytes) -> bool:
    try:
        ipaddress.IPv6Address(text.decode("ascii"))
        return True
    except ValueError:
        return False
