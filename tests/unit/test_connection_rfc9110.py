"""RFC 9110 (HTTP semantics) on the connection (webhook/server/connection.py),
driven through a mock transport: one case per rule, named after its section."""
import email.utils

import pytest

from tests.unit.connection_mock import both_transports  # noqa: F401 (the fixture)
from tests.unit.connection_mock import (answers, chunked, connected, get, lookup_first, only_answer, post, refused,
                                        review_body, waiting_review)

pytestmark = pytest.mark.usefixtures("both_transports")

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


# --- §6.5.1: trailers ------------------------------------------------------------------

def test_rfc9110_6_5_1_trailer_fields_are_not_merged_into_the_header_fields():
    conn, t = connected()
    # A trailer that would change the request if it were taken as a header field.
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n"
                       + chunked(review_body("t"), trailer=b"Content-Type: text/plain\r\nHost: evil\r\n"))
    answer = only_answer(t)
    assert answer.status == 200 and answer.json()["response"]["uid"] == "t"


# --- §6.6.1: Date ------------------------------------------------------------------------

def test_rfc9110_6_6_1_every_answer_has_a_date_in_imf_fixdate():
    conn, t = connected()
    conn.data_received(post(review_body()) + get() + get("/nope") + b"GET / HTTP/1.1\r\n\r\n")
    found = answers(t.buffer)
    assert [a.status for a in found] == [200, 200, 404, 400]
    for answer in found:
        date = answer.header("date")
        assert date and date.endswith(" GMT") and email.utils.parsedate_to_datetime(date).tzname() == "UTC"


# --- §7.8: Upgrade ----------------------------------------------------------------------

def test_rfc9110_7_8_an_upgrade_is_not_switched_to_and_earlier_requests_are_answered():
    conn, t = connected()
    before = refused("upgrade")
    conn.data_received(get() + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n")
    found = answers(t.buffer)
    assert [a.status for a in found] == [200, 400] and "upgrades" in found[1].json()["error"]
    assert refused("upgrade") == before + 1


# --- §10.1.1: Expect --------------------------------------------------------------------

def _expecting(uid: str, version: bytes = b"1.1") -> tuple[bytes, bytes]:
    request = post(review_body(uid), extra=b"Expect: 100-continue\r\n", version=version)
    head, _, body = request.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", body


def test_rfc9110_10_1_1_100_continue_comes_before_the_body_is_sent():
    conn, t = connected()
    head, body = _expecting("c")
    conn.data_received(head)
    assert t.take() == CONTINUE
    conn.data_received(body)
    answer = only_answer(t)
    assert answer.status == 200 and answer.json()["response"]["uid"] == "c"


def test_rfc9110_10_1_1_a_pipelined_expectation_gets_its_100_after_the_previous_answer():
    conn, t = connected()
    head, body = _expecting("second")
    conn.data_received(post(waiting_review("first")) + head)      # one read: a request, then the head of the next
    assert answers(t.buffer)[0].status == 200
    assert t.buffer.endswith(CONTINUE) and t.buffer.index(CONTINUE) > t.buffer.index(b'"first"')
    t.take()
    conn.data_received(body)
    assert only_answer(t).json()["response"]["uid"] == "second"


def test_rfc9110_10_1_1_no_100_before_the_answer_to_an_earlier_request_judged_in_the_pool():
    conn, t = connected()
    lookup_first(conn.shared)
    head, body = _expecting("second")
    conn.data_received(post(waiting_review("first")) + head)
    assert t.buffer == b""                           # neither the first answer nor a 100 yet
    conn.loop.pool.pop().run()
    data = t.take()
    assert data.index(b'"first"') < data.index(CONTINUE)
    conn.data_received(body)
    assert only_answer(t).json()["response"]["uid"] == "second"


def test_rfc9110_10_1_1_an_http_1_0_expectation_is_ignored():
    conn, t = connected()
    head, body = _expecting("old", version=b"1.0")
    conn.data_received(head)
    assert t.buffer == b""
    conn.data_received(body)
    assert only_answer(t).status == 200


def test_rfc9110_10_1_1_an_unknown_expectation_is_a_417():
    conn, t = connected()
    before = refused("expectation")
    conn.data_received(post(review_body(), extra=b"Expect: 200-ok\r\n"))
    answer = only_answer(t)
    assert answer.status == 417 and "200-ok" in answer.json()["error"] and refused("expectation") == before + 1


def test_rfc9110_10_1_1_a_body_over_the_limit_is_refused_instead_of_invited():
    conn, t = connected(max_body=65536)
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                       b"Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n")
    answer = only_answer(t)
    assert answer.status == 413 and "server.maxBodyBytes" in answer.json()["error"] and t.ended


# --- §15: status codes -------------------------------------------------------------------

def test_rfc9110_15_5_6_a_405_names_the_allowed_methods():
    conn, t = connected()
    conn.data_received(get("/validate") + b"DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    found = answers(t.buffer)
    assert [a.status for a in found] == [405, 405]
    assert "POST" in found[0].header("allow") and "GET" in found[1].header("allow")


def test_rfc9110_15_5_9_a_body_not_complete_within_the_body_timeout_is_a_408():
    conn, t = connected(body_timeout=10.0, idle=30.0)
    before = refused("body_timeout")
    request = post(review_body())
    conn.data_received(request[:-50])
    for _ in range(11):            # a byte a second: never idle, but not done in 10 s
        conn.loop.advance(1.0)
        if not t.ended:
            conn.data_received(request[-50:-49])
    answer = only_answer(t)
    assert answer.status == 408 and "server.bodyTimeoutSeconds" in answer.json()["error"] and t.ended
    assert refused("body_timeout") == before + 1


def test_rfc9110_15_5_9_a_head_not_complete_within_the_idle_timeout_is_a_408():
    conn, t = connected(idle=30.0)
    before = refused("head_timeout")
    conn.data_received(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    conn.loop.advance(29.0)
    assert t.buffer == b""
    conn.loop.advance(2.0)
    assert only_answer(t).status == 408 and t.ended and refused("head_timeout") == before + 1


def test_rfc9110_15_5_14_a_body_over_the_limit_is_read_then_a_413():
    conn, t = connected(max_body=65536)
    conn.data_received(post(b"x" * 70000))
    answer = only_answer(t)
    assert answer.status == 413 and "larger than 65536 bytes" in answer.json()["error"]


def test_an_idle_kept_alive_connection_is_closed_cleanly_without_an_answer():
    conn, t = connected(idle=30.0)
    conn.data_received(get())
    t.take()
    conn.loop.advance(31.0)
    assert t.ended and not t.aborted and t.buffer == b""
