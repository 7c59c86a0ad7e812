"""A stopping worker's connections (Connection.shutdown, RFC 9112 §9.6): a
request already on its way is answered with `Connection: close`; a connection
is closed without an answer only once it has been idle for the grace period."""
import pytest

from tests.unit.connection_mock import both_transports  # noqa: F401 (the fixture)
from tests.unit.connection_mock import Shared, answers, get, lookup_first, post, review_body, waiting_review
from webhook.server.connection import SHUTDOWN_IDLE_GRACE

pytestmark = pytest.mark.usefixtures("both_transports")


def test_an_idle_kept_alive_connection_is_not_closed_under_a_request_that_is_on_its_way():
    shared = Shared()
    conn, t = shared.connect()
    conn.data_received(get())
    t.take()
    conn.shutdown()
    shared.loop.advance(SHUTDOWN_IDLE_GRACE / 2)
    assert not t.ended
    conn.data_received(post(review_body("in transit")))
    answer = answers(t.buffer)[0]
    assert answer.json()["response"]["uid"] == "in transit" and answer.header("connection") == "close"
    assert t.ended and not t.aborted


def test_a_connection_idle_for_the_grace_period_is_closed_cleanly():
    shared = Shared()
    conn, t = shared.connect()
    conn.data_received(get())
    t.take()
    conn.shutdown()
    shared.loop.advance(SHUTDOWN_IDLE_GRACE + 0.01)
    assert t.ended and not t.aborted and t.buffer == b""


def test_a_connection_idle_long_before_the_stop_closes_at_once():
    shared = Shared()
    conn, t = shared.connect()
    shared.loop.advance(5.0)
    conn.shutdown()
    shared.loop.advance(0.0)
    assert t.ended and t.buffer == b""


def test_a_request_half_read_at_the_stop_is_answered_with_connection_close():
    shared = Shared()
    conn, t = shared.connect()
    request = post(review_body("half"))
    conn.data_received(request[:40])
    conn.shutdown()
    shared.loop.advance(SHUTDOWN_IDLE_GRACE * 3)
    assert not t.ended
    conn.data_received(request[40:])
    answer = answers(t.buffer)[0]
    assert answer.json()["response"]["uid"] == "half" and answer.header("connection") == "close" and t.ended


def test_pipelined_requests_read_at_the_stop_are_all_answered_and_the_last_says_close():
    shared = Shared()
    conn, t = shared.connect()
    conn.shutdown()
    conn.data_received(post(review_body("1")) + post(review_body("2")) + post(review_body("3")))
    found = answers(t.buffer)
    assert [a.json()["response"]["uid"] for a in found] == ["1", "2", "3"]
    assert [a.header("connection") for a in found] == [None, None, "close"] and t.ended


def test_an_answer_still_in_the_lookup_pool_at_the_stop_is_sent_with_connection_close():
    shared = Shared()
    lookup_first(shared)
    conn, t = shared.connect()
    conn.data_received(post(waiting_review("looked up")))
    conn.shutdown()
    shared.loop.advance(SHUTDOWN_IDLE_GRACE * 3)
    assert t.buffer == b"" and not t.ended
    shared.loop.pool.pop().run()
    answer = answers(t.buffer)[0]
    assert answer.json()["response"]["uid"] == "looked up" and answer.header("connection") == "close"
