"""HTTP/1.1 on the real server's connections (webhook/server/connection.py),
byte by byte over TLS: pipelining, 100-continue, HEAD, HTTP/1.0, the head's
limits. Every answer is a status line with a one-line JSON reason; nothing is
a 500."""
from __future__ import annotations

import json
import socket
import ssl
import time

import pytest

from tests.server.harness import Server, admission_request, read_answers
from tests.unit.helpers import pod, podgroup


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with Server(str(tmp_path_factory.mktemp("http")), extra=["--cluster", "disabled",
                                                             "--max-body-bytes", "65536"]) as s:
        yield s


def _tls(server: Server):
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return server.ssl_context().wrap_socket(raw, server_hostname="localhost")


def _post(path: str, obj: dict, uid: str, extra: bytes = b"") -> bytes:
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": admission_request(obj, uid=uid)}).encode()
    return (b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n"
            % (path.encode(), extra, len(body)) + body)


def test_pipelined_requests_are_answered_in_order(server):
    s = _tls(server)
    s.sendall(b"".join(_post("/validate" if i % 2 else "/mutate", podgroup() if i % 2 else pod({}), f"u{i}")
                       for i in range(10)) + b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    answers = read_answers(s, 11)
    s.close()
    assert [a[0] for a in answers] == [200] * 11
    assert [json.loads(a[2])["response"]["uid"] for a in answers[:10]] == [f"u{i}" for i in range(10)]
    assert json.loads(answers[10][2]) == {"status": "ok"}


def test_expect_100_continue(server):
    s = _tls(server)
    request = _post("/validate", podgroup(), "u-continue", extra=b"Expect: 100-continue\r\n")
    head, _, body = request.partition(b"\r\n\r\n")
    s.sendall(head + b"\r\n\r\n")
    interim = read_answers(s, 1)
    s.sendall(body)
    final = read_answers(s, 1)
    s.close()
    assert interim[0][0] == 100
    assert final[0][0] == 200 and json.loads(final[0][2])["response"]["uid"] == "u-continue"


def test_expect_100_continue_over_the_limit_is_refused_before_the_body(server):
    s = _tls(server)
    s.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n"
              b"Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
    answers = read_answers(s, 1)
    s.close()
    assert answers[0][0] == 413 and "server.maxBodyBytes" in json.loads(answers[0][2])["error"]
    assert answers[0][1]["connection"] == "close"


def test_head_has_the_length_and_no_body(server):
    s = _tls(server)
    s.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    # Nothing may follow the head of a HEAD answer: the next bytes are the next answer's
    # status line (answers go in order, each in one write), not a body.
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    answer = read_answers(s, 1)[0]
    s.close()
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in data.split(b"\r\n") if line.lower().startswith(b"content-length")))
    assert answer[0] == 200 and length == len(answer[2]) > 0


def test_http_1_0_and_connection_close_end_the_connection(server):
    for request in (b"GET /healthz HTTP/1.0\r\n\r\n", b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"):
        s = _tls(server)
        s.sendall(request)
        answers = read_answers(s, 1)
        assert answers[0][0] == 200
        assert s.recv(10) == b""        # closed by the server after the answer
        s.close()


@pytest.mark.parametrize("request_bytes, phrase", [
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", "request line is longer"),
    (b"GET /healthz HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n", "header fields"),
    (b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 70000, "request head is larger"),
    (b"GET /healthz HTTP/9.9\r\n\r\n", "malformed request"),
    (b"\x00\x01\x02 garbage\r\n\r\n", "malformed request"),
])
def test_heads_over_the_limits_or_malformed_are_a_one_line_400(server, request_bytes, phrase):
    s = _tls(server)
    s.sendall(request_bytes)
    answers = read_answers(s, 1)
    s.close()
    assert answers and answers[0][0] == 400, answers
    assert phrase in json.loads(answers[0][2])["error"]
    assert answers[0][1]["connection"] == "close"
    assert "Traceback" not in server.log()


def test_a_request_after_a_refused_one_on_the_same_bytes_is_not_read(server):
    s = _tls(server)
    s.sendall(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n" + _post("/validate", podgroup(), "after"))
    answers = read_answers(s, 2)
    s.close()
    assert [a[0] for a in answers] == [400]


def test_every_answer_has_a_date_and_http_1_1_without_host_is_a_400(server):
    s = _tls(server)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n")
    answers = read_answers(s, 2)
    s.close()
    assert [a[0] for a in answers] == [200, 400]
    assert all(a[1]["date"].endswith(" GMT") for a in answers)
    assert "Host header field is missing" in json.loads(answers[1][2])["error"]


def test_bytes_after_a_connection_close_request_leave_its_answer_alone(server):
    s = _tls(server)
    s.sendall(_post("/validate", podgroup(), "closing", extra=b"Connection: close\r\n") + b"GET / HTTP/1.1\r\n\r\n")
    answers = read_answers(s, 2)
    s.close()
    assert [a[0] for a in answers] == [200]
    assert json.loads(answers[0][2])["response"]["uid"] == "closing" and answers[0][1]["connection"] == "close"


def _big_head(size: int) -> bytes:
    return (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % size)


def test_a_client_that_keeps_sending_its_body_after_the_413_reads_the_413(server):
    """A client that writes its whole body before it reads (http.client, requests): the
    413 comes after 4 x maxBodyBytes, the rest is dropped by the lingering close
    (RFC 9112 §9.6), so the client's writes all go through and it reads its answer."""
    size, piece = 16 * 1024 * 1024, b" " * 65536
    s = _tls(server)
    s.settimeout(20)
    s.sendall(_big_head(size))
    for _ in range(size // len(piece)):
        s.sendall(piece)                # a reset here is what the linger prevents
    answers = read_answers(s, 1)
    assert answers[0][0] == 413 and "server.maxBodyBytes" in json.loads(answers[0][2])["error"]
    assert answers[0][1]["connection"] == "close"
    assert s.recv(10) == b""            # the server's close, once the client is done
    s.close()


def test_a_client_that_never_stops_sending_is_cut_off_at_the_linger_bound(server):
    from webhook.server.connection import LINGER_SECONDS
    piece = b" " * 65536
    s = _tls(server)
    s.settimeout(20)
    s.sendall(_big_head(1 << 40))
    started, cut = time.monotonic(), None
    while time.monotonic() - started < 60:
        try:
            s.sendall(piece)
        except (OSError, ssl.SSLError) as exc:
            cut = exc
            break
    elapsed = time.monotonic() - started
    assert cut is not None and elapsed < LINGER_SECONDS + 10, (cut, elapsed)
    answers = read_answers(s, 1)        # its answer came before the cut, and is still there to read
    s.close()
    assert answers and answers[0][0] == 413
