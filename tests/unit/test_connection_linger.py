"""The lingering close (RFC 9112 §9.6) on the connection (webhook/server/connection.py),
driven through a mock transport: after the answer that ends a connection the write side
is half-closed, what the client still sends is dropped unparsed, and the connection closes
once the client closes its side or a bound (LINGER_SECONDS, LINGER_BYTES) is reached."""
import pytest

from tests.unit.connection_mock import answers, connected, get, only_answer, post, refused, review_body
from webhook.server.connection import IO_SLACK_SECONDS, LINGER_BYTES, LINGER_SECONDS


def _refused_413(**kw):
    conn, t = connected(half_close=True, max_body=65536, **kw)
    conn.data_received(post(b"x" * (5 * 65536)))        # past the drain budget: answered while it still comes
    assert only_answer(t).status == 413
    return conn, t


# --- a transport that can half-close (write_eof) ---------------------------------------

def test_the_write_side_is_half_closed_after_the_answer_and_the_close_waits_for_the_clients():
    conn, t = _refused_413()
    assert t.eof and not t.closed and t.reading           # the answer, then a FIN; still reading
    conn.loop.advance(LINGER_SECONDS / 2)
    assert not t.closed
    conn.eof_received()                                    # the client read its 413 and closed
    assert t.closed and not t.aborted


def test_what_arrives_while_lingering_is_dropped_and_never_parsed():
    conn, t = _refused_413()
    malformed, too_large = refused("malformed"), refused("body_too_large")
    conn.data_received(b"x" * 65536)                       # the rest of the body
    conn.data_received(post(review_body("after")) + get() + b"GET /b HTTP/9.9\r\n\r\n")
    assert len(answers(t.buffer)) == 1 and not t.closed    # no answer to any of it, nothing refused
    assert refused("malformed") == malformed and refused("body_too_large") == too_large
    assert conn.lingered == 65536 + len(post(review_body("after")) + get()) + len(b"GET /b HTTP/9.9\r\n\r\n")


def test_the_linger_ends_at_its_time_bound():
    conn, t = _refused_413()
    conn.loop.advance(LINGER_SECONDS - 0.1)
    conn.data_received(b"x" * 1000)                        # a client that keeps sending does not extend it
    assert not t.closed
    conn.loop.advance(0.2)
    assert t.closed and t.aborted


def test_the_linger_ends_at_its_byte_bound():
    conn, t = _refused_413()
    piece = b"x" * (1024 * 1024)
    fed = 0
    while not t.closed and fed <= 2 * LINGER_BYTES:
        conn.data_received(piece)
        fed += len(piece)
    assert t.aborted and LINGER_BYTES < fed <= LINGER_BYTES + len(piece)


def test_a_connection_close_request_with_bytes_after_it_lingers_too():
    conn, t = connected(half_close=True)
    conn.data_received(post(review_body("last"), extra=b"Connection: close\r\n") + b"GET / HTTP/1.1\r\n")
    answer = only_answer(t)
    assert answer.json()["response"]["uid"] == "last" and answer.header("connection") == "close"
    assert t.eof and not t.closed
    conn.data_received(b"Host: x\r\n\r\n")
    conn.eof_received()
    assert len(answers(t.buffer)) == 1 and t.closed and not t.aborted


def test_a_timed_out_head_is_answered_408_then_lingers():
    conn, t = connected(half_close=True, idle=30.0)
    conn.data_received(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    conn.loop.advance(31.0)
    assert only_answer(t).status == 408 and t.eof and not t.closed
    conn.data_received(b"X-Late: 1\r\n\r\n")               # the rest of the head, too late: dropped
    assert len(answers(t.buffer)) == 1
    conn.loop.advance(LINGER_SECONDS)
    assert t.closed


def test_the_linger_starts_once_a_blocked_answer_is_taken():
    conn, t = connected(half_close=True, idle=30.0)
    conn.data_received(get(extra=b"Connection: close\r\n"))
    conn.pause_writing()                                   # the answer did not fit: the client is not reading
    assert t.eof and not t.closed
    conn.loop.advance(LINGER_SECONDS + 1)
    assert not t.closed                                    # its answer is not out yet: its write deadline holds
    conn.resume_writing()
    conn.loop.advance(LINGER_SECONDS - 0.1)
    assert not t.closed
    conn.loop.advance(0.2)
    assert t.closed


def test_an_answer_never_taken_is_dropped_at_the_write_deadline():
    conn, t = connected(half_close=True, idle=30.0)
    conn.data_received(get(extra=b"Connection: close\r\n"))
    conn.pause_writing()
    conn.loop.advance(30.0 + IO_SLACK_SECONDS - 0.1)
    assert not t.closed
    conn.loop.advance(0.2)
    assert t.closed and t.aborted


def test_a_connection_lost_while_lingering_ends_it():
    conn, t = _refused_413()
    conn.connection_lost(None)
    assert not conn.lingering and conn not in conn.shared.open
    conn.loop.advance(LINGER_SECONDS + 1)
    assert not t.closed                                    # nothing more is done to a lost transport


# --- uvloop's TLS transport (no write_eof) ---------------------------------------------

@pytest.mark.parametrize("client_closes", [True, False])
def test_over_tls_the_half_close_is_close_after_the_answer_and_the_time_bound_aborts(client_closes):
    conn, t = connected(max_body=65536)
    conn.data_received(post(b"x" * (5 * 65536)))
    assert only_answer(t).status == 413
    assert t.closed and not t.aborted and not t.eof         # close(): the answer flushed, then close_notify
    if client_closes:
        conn.eof_received()                                 # its close_notify: uvloop finishes the close
        conn.connection_lost(None)
    conn.loop.advance(LINGER_SECONDS + 0.1)
    assert t.aborted is not client_closes                  # a client that never closes is dropped at the bound
