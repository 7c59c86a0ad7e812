"""RFC 9112 (HTTP/1.1 message syntax, framing, persistence) on the connection
(webhook/server/connection.py), driven through a mock transport: one case per
rule, named after its section."""
import pytest

from tests.unit.connection_mock import both_transports  # noqa: F401 (the fixture)
from tests.unit.connection_mock import answers, only_answer, chunked, connected, get, post, refused, review_body
from webhook.server.request import HEAD_LIMIT

pytestmark = pytest.mark.usefixtures("both_transports")


# --- §2.3, §5: the head's limits -------------------------------------------------

def test_rfc9112_2_3_a_head_over_the_limit_that_completes_in_the_read_crossing_it_is_a_400():
    conn, t = connected()
    before = refused("head_too_large")
    padding = b"X-Pad: " + b"a" * (HEAD_LIMIT - 1000) + b"\r\n"
    conn.data_received(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Start: 1\r\n")   # 40 bytes under way
    conn.data_received(padding + b"X-More: " + b"b" * 2000 + b"\r\n\r\n")            # crosses and completes
    answer = only_answer(t)
    assert answer.status == 400 and "request head is larger than 65536 bytes" in answer.json()["error"]
    assert t.ended and refused("head_too_large") == before + 1


def test_rfc9112_2_3_a_head_within_the_limit_in_one_read_is_served():
    conn, t = connected()
    conn.data_received(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * (HEAD_LIMIT - 200) + b"\r\n\r\n")
    assert only_answer(t).status == 200 and not t.ended


def test_rfc9112_2_3_a_head_still_arriving_past_the_limit_is_refused_before_it_ends():
    conn, t = connected()
    conn.data_received(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
    for _ in range(3):
        conn.data_received(b"a" * 30000)
    assert only_answer(t).status == 400 and t.ended
    conn.data_received(b"a" * 30000 + b"\r\n\r\n")       # nothing more is read
    assert len(answers(t.buffer)) == 1


def test_rfc9112_3_request_line_over_the_limit_is_a_400():
    conn, t = connected()
    conn.data_received(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = only_answer(t)
    assert answer.status == 400 and "request line is longer" in answer.json()["error"]


def test_rfc9112_5_more_than_100_fields_is_a_400():
    conn, t = connected()
    conn.data_received(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(100))
                       + b"\r\n")
    assert only_answer(t).status == 400


def test_rfc9112_5_1_whitespace_between_field_name_and_colon_is_a_400():
    conn, t = connected()
    conn.data_received(b"GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n")
    assert only_answer(t).status == 400 and t.ended


def test_rfc9112_5_2_obsolete_line_folding_is_a_400():
    conn, t = connected()
    conn.data_received(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\n\r\n")
    assert only_answer(t).status == 400 and t.ended


# --- §3.2: Host ----------------------------------------------------------------------

def test_rfc9112_3_2_an_http_1_1_request_without_host_is_a_400():
    conn, t = connected()
    before = refused("host")
    conn.data_received(get(host=None))
    answer = only_answer(t)
    assert answer.status == 400 and "Host header field is missing" in answer.json()["error"]
    assert t.ended and refused("host") == before + 1


def test_rfc9112_3_2_more_than_one_host_is_a_400():
    conn, t = connected()
    conn.data_received(get(host=b"Host: a.example\r\nHost: b.example\r\n"))
    answer = only_answer(t)
    assert answer.status == 400 and "more than one Host" in answer.json()["error"]


@pytest.mark.parametrize("value", [b"a b", b"exa mple:80", b"host:80x", b"[::1", b"[not-ipv6]:443", b"a/b",
                                   b"user@host", b"h\x80st"])
def test_rfc9112_3_2_a_host_that_is_not_host_port_is_a_400(value):
    conn, t = connected()
    conn.data_received(get(host=b"Host: " + value + b"\r\n"))
    answer = only_answer(t)
    assert answer.status == 400, value
    assert "not a valid host" in answer.json()["error"] or "malformed" in answer.json()["error"]


@pytest.mark.parametrize("value", [b"workload-webhook.workload-webhook.svc:443", b"127.0.0.1:8443", b"[::1]:8443",
                                   b"[fe80::1]", b"localhost", b"", b"xn--bcher-kva.example", b"a%2Eb"])
def test_rfc9112_3_2_valid_hosts_are_served(value):
    conn, t = connected()
    conn.data_received(get(host=b"Host: " + value + b"\r\n"))
    assert only_answer(t).status == 200, value


def test_rfc9112_3_2_an_http_1_0_request_may_omit_host():
    conn, t = connected()
    conn.data_received(get(version=b"1.0", host=None))
    assert only_answer(t).status == 200


def test_rfc9112_3_2_2_an_absolute_form_target_is_served_by_its_path():
    conn, t = connected()
    conn.data_received(post(review_body("abs"), path="https://webhook.example:8443/validate"))
    answer = only_answer(t)
    assert answer.status == 200 and answer.json()["response"]["uid"] == "abs"


# --- §6: message body framing --------------------------------------------------------

CODED_HEAD = b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


@pytest.mark.parametrize("codings", [b"Transfer-Encoding: gzip\r\n", b"Transfer-Encoding: identity\r\n",
                                     b"Transfer-Encoding: chunked, gzip\r\n",
                                     b"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
                                     b"Transfer-Encoding: gzip, chunked, gzip\r\n"],
                         ids=["gzip", "identity", "chunked then gzip", "two field lines", "gzip around chunked"])
def test_rfc9112_6_3_a_request_whose_last_transfer_coding_is_not_chunked_is_a_400_and_close(codings):
    conn, t = connected()
    before, malformed = refused("transfer_coding"), refused("malformed")
    conn.data_received(CODED_HEAD + codings + b"\r\n" + chunked(review_body()) + get())
    answer = only_answer(t)             # its body's length cannot be known: nothing after the head is read
    assert answer.status == 400 and "Transfer-Encoding" in answer.json()["error"], answer.body
    assert answer.header("connection") == "close" and t.ended
    assert refused("transfer_coding") == before + 1 and refused("malformed") == malformed


@pytest.mark.parametrize("codings", [b"Transfer-Encoding: gzip, chunked\r\n",
                                     b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"],
                         ids=["one field line", "two field lines"])
def test_rfc9112_6_1_a_coding_before_chunked_is_a_501(codings):
    conn, t = connected()
    before = refused("transfer_coding")
    conn.data_received(CODED_HEAD + codings + b"\r\n" + chunked(review_body()))
    answer = only_answer(t)
    assert answer.status == 501 and "gzip" in answer.json()["error"] and t.ended
    assert refused("transfer_coding") == before + 1


def test_rfc9112_7_chunked_with_parameters_is_a_400():
    conn, t = connected()
    conn.data_received(CODED_HEAD + b"Transfer-Encoding: chunked;x=1\r\n\r\n" + chunked(review_body()))
    assert only_answer(t).status == 400 and t.ended


def test_rfc9112_6_1_transfer_encoding_in_an_http_1_0_request_is_faulty_framing():
    conn, t = connected()
    conn.data_received(b"POST /validate HTTP/1.0\r\nContent-Type: application/json\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n" + chunked(review_body()))
    assert only_answer(t).status == 400 and t.ended


def test_rfc9112_6_3_content_length_and_transfer_encoding_together_is_a_400_and_close():
    conn, t = connected()
    body = review_body()
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(body) + chunked(body))
    answer = only_answer(t)
    assert answer.status == 400 and "Transfer-Encoding" in answer.json()["error"]
    assert answer.header("connection") == "close" and t.ended


@pytest.mark.parametrize("lengths", [b"Content-Length: 5\r\nContent-Length: 5\r\n",
                                     b"Content-Length: 5\r\nContent-Length: 6\r\n", b"Content-Length: 5, 5\r\n"],
                         ids=["same twice", "two values", "a list"])
def test_rfc9112_6_3_a_duplicate_content_length_is_a_400(lengths):
    conn, t = connected()
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\n" + lengths + b"\r\nhello")
    assert only_answer(t).status == 400 and t.ended


@pytest.mark.parametrize("value", [b"abc", b"-5", b"+5", b"5a", b"0x10"])
def test_rfc9112_6_3_an_invalid_content_length_is_a_400(value):
    conn, t = connected()
    before = refused("malformed")
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: " + value + b"\r\n\r\nhello")
    assert only_answer(t).status == 400 and t.ended and refused("malformed") == before + 1


def test_rfc9112_6_3_a_request_without_length_has_no_body():
    conn, t = connected()
    conn.data_received(get() + get("/readyz"))
    assert [a.status for a in answers(t.buffer)] == [200, 200]


def test_rfc9112_7_1_a_chunked_body_is_decoded_and_judged():
    conn, t = connected()
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n" + chunked(review_body("chunks"), parts=5))
    answer = only_answer(t)
    assert answer.status == 200 and answer.json()["response"]["uid"] == "chunks" and not t.ended


def test_rfc9112_7_1_a_malformed_chunk_size_is_a_400():
    conn, t = connected()
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
    answer = only_answer(t)
    assert answer.status == 400 and "could not be read" in answer.json()["error"]


def test_rfc9112_7_1_2_a_trailer_section_over_the_head_limit_is_refused_before_it_is_read():
    conn, t = connected()
    before = refused("trailers_too_large")
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-Trailer: ")
    fed = 0
    while not t.ended and fed < 32 * 1024 * 1024:       # what a hostile client would send: 32 MiB
        conn.data_received(b"a" * 16384)
        fed += 16384
    answer = only_answer(t)
    assert answer.status == 400 and "trailer section" in answer.json()["error"]
    assert fed <= HEAD_LIMIT + 16384 and refused("trailers_too_large") == before + 1


def test_rfc9112_7_1_2_many_trailer_fields_count_with_the_head():
    conn, t = connected()
    trailer = b"".join(b"X-T%d: v\r\n" % i for i in range(120))
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n" + chunked(review_body(), trailer=trailer))
    assert only_answer(t).status == 400


# --- §9: connection management -------------------------------------------------------

def test_rfc9112_9_3_http_1_1_keeps_the_connection_and_1_0_closes_it():
    conn, t = connected()
    conn.data_received(get())
    assert only_answer(t).header("connection") is None and not t.ended
    conn, t = connected()
    conn.data_received(get(version=b"1.0", host=None))
    assert only_answer(t).header("connection") == "close" and t.ended


def test_rfc9112_9_3_2_pipelined_requests_are_answered_in_order():
    conn, t = connected()
    conn.data_received(b"".join(post(review_body(f"u{i}")) for i in range(5)) + get())
    found = answers(t.buffer)
    assert [a.status for a in found] == [200] * 6
    assert [a.json()["response"]["uid"] for a in found[:5]] == [f"u{i}" for i in range(5)]
    assert t.reading and not t.ended


def test_rfc9112_9_3_2_a_complete_request_before_a_malformed_one_in_the_same_read_is_answered():
    conn, t = connected()
    conn.data_received(post(review_body("first")) + b"GET /b HTTP/9.9\r\n\r\n" + get())
    found = answers(t.buffer)
    assert [a.status for a in found] == [200, 400]
    assert found[0].json()["response"]["uid"] == "first" and found[1].header("connection") == "close"
    assert t.ended


def test_rfc9112_9_3_2_a_request_after_a_refused_one_is_not_read():
    conn, t = connected()
    conn.data_received(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n" + post(review_body()))
    assert [a.status for a in answers(t.buffer)] == [400]


def test_rfc9112_9_6_bytes_after_a_connection_close_request_are_not_read_and_it_is_answered():
    conn, t = connected()
    before = refused("malformed")
    conn.data_received(post(review_body("last"), extra=b"Connection: close\r\n") + b"GET / HTTP/1.1\r\n\r\ngarbage")
    answer = only_answer(t)
    assert answer.status == 200 and answer.json()["response"]["uid"] == "last"
    assert answer.header("connection") == "close" and t.ended and refused("malformed") == before


def test_rfc9112_9_6_a_half_closed_client_still_gets_the_answer_to_its_complete_request():
    conn, t = connected()
    conn.data_received(post(review_body("half")))
    conn.eof_received()
    answer = only_answer(t)
    assert answer.status == 200 and answer.json()["response"]["uid"] == "half"


def test_rfc9112_9_6_a_client_that_half_closes_mid_body_gets_a_400():
    conn, t = connected()
    before = refused("incomplete")
    conn.data_received(post(review_body())[:-20])
    conn.eof_received()
    answer = only_answer(t)
    assert answer.status == 400 and "ended early" in answer.json()["error"] and t.ended
    assert refused("incomplete") == before + 1
