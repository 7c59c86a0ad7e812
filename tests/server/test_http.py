"""HTTP/1.1 on the real server's connections (webhook/server/connection.py),
byte by byte over TLS: pipelining, 100-continue, HEAD, HTTP/1.0, the head's
limits. Every answer is a status line with a one-line JSON reason; nothing is
a 500."""
from __future__ import annotations

import json
import socket

import pytest

from tests.server.harness import Server, admission_request
from tests.unit.helpers import pod, podgroup


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with Server(str(tmp_path_factory.mktemp("http")), extra=["--cluster", "disabled",
                                                             "--max-body-bytes", "65536"]) as s:
        yield s


def _tls(server: Server):
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return server.ssl_context().wrap_socket(raw, server_hostname="localhost")


def _read_answers(sock, count: int) -> list[tuple[int, dict, bytes]]:
    """`count` answers from the socket: (status, headers, body)."""
    data, answers = b"", []
    while len(answers) < count:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return answers
            data += chunk
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers = {k.strip().lower().decode(): v.strip().decode() for k, v in (ln.split(b":", 1) for ln in lines[1:])}
        length = int(headers.get("content-length", 0)) if status != 100 else 0
        while len(data) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        answers.append((status, headers, data[:length]))
        data = data[length:]
    return answers


def _post(path: str, obj: dict, uid: str, extra: bytes = b"") -> bytes:
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": admission_request(obj, uid=uid)}).encode()
    return (b"POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n"
            % (path.encode(), extra, len(body)) + body)


def test_pipelined_requests_are_answered_in_order(server):
    s = _tls(server)
    s.sendall(b"".join(_post("/validate" if i % 2 else "/mutate", podgroup() if i % 2 else pod({}), f"u{i}")
                       for i in range(10)) + b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    answers = _read_answers(s, 11)
    s.close()
    assert [a[0] for a in answers] == [200] * 11
    assert [json.loads(a[2])["response"]["uid"] for a in answers[:10]] == [f"u{i}" for i in range(10)]
    assert json.loads(answers[10][2]) == {"status": "ok"}


def test_expect_100_continue(server):
    s = _tls(server)
    request = _post("/validate", podgroup(), "u-continue", extra=b"Expect: 100-continue\r\n")
    head, _, body = request.partition(b"\r\n\r\n")
    s.sendall(head + b"\r\n\r\n")
    interim = _read_answers(s, 1)
    s.sendall(body)
    final = _read_answers(s, 1)
    s.close()
    assert interim[0][0] == 100
    assert final[0][0] == 200 and json.loads(final[0][2])["response"]["uid"] == "u-continue"


def test_expect_100_continue_over_the_limit_is_refused_before_the_body(server):
    s = _tls(server)
    s.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n"
              b"Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
    answers = _read_answers(s, 1)
    s.close()
    assert answers[0][0] == 413 and "server.maxBodyBytes" in json.loads(answers[0][2])["error"]
    assert answers[0][1]["connection"] == "close"


def test_head_has_the_length_and_no_body(server):
    s = _tls(server)
    s.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    s.settimeout(0.5)
    try:
        extra = s.recv(65536)           # nothing may follow the head of a HEAD answer
    except TimeoutError:
        extra = b""
    s.settimeout(10)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    answer = _read_answers(s, 1)[0]
    s.close()
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"\r\n\r\n") and extra == b""
    length = int(next(line.split(b":")[1] for line in data.split(b"\r\n") if line.lower().startswith(b"content-length")))
    assert answer[0] == 200 and length == len(answer[2]) > 0


def test_http_1_0_and_connection_close_end_the_connection(server):
    for request in (b"GET /healthz HTTP/1.0\r\n\r\n", b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"):
        s = _tls(server)
        s.sendall(request)
        answers = _read_answers(s, 1)
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
    answers = _read_answers(s, 1)
    s.close()
    assert answers and answers[0][0] == 400, answers
    assert phrase in json.loads(answers[0][2])["error"]
    assert answers[0][1]["connection"] == "close"
    assert "Traceback" not in server.log()


def test_a_request_after_a_refused_one_on_the_same_bytes_is_not_read(server):
    s = _tls(server)
    s.sendall(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n" + _post("/validate", podgroup(), "after"))
    answers = _read_answers(s, 2)
    s.close()
    assert [a[0] for a in answers] == [400]
