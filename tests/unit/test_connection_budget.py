"""The worker's budget of buffered body bytes (webhook/server/budget.py) and
the deadlines of a body, on connections driven through a mock transport."""
import pytest

from tests.unit.connection_mock import both_transports  # noqa: F401 (the fixture)
from tests.unit.connection_mock import Shared, answers, chunked, post, refused, review_body
from webhook.server.budget import BodyBudget
from webhook.server.connection import READ_AHEAD

pytestmark = pytest.mark.usefixtures("both_transports")

LIMIT = 65536


def _head(length: int, extra: bytes = b"") -> bytes:
    return (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s"
            b"Content-Length: %d\r\n\r\n" % (extra, length))


class Granted:
    def __init__(self):
        self.count = 0

    def budget_granted(self):
        self.count += 1


# --- the budget alone --------------------------------------------------------------------

def test_a_claim_that_fits_is_held_until_given_back():
    budget = BodyBudget(100)
    assert budget.take(60) and budget.held == 60
    assert not budget.take(50)
    budget.give_back(60)
    assert budget.take(50) and budget.held == 50


def test_waiters_are_granted_in_arrival_order_as_bytes_come_back():
    budget = BodyBudget(100)
    budget.take(100)
    first, second = Granted(), Granted()
    budget.wait(first, 60)
    budget.wait(second, 40)
    assert (first.count, second.count) == (0, 0)
    budget.give_back(60)
    assert (first.count, second.count) == (1, 0) and budget.held == 100
    budget.give_back(40)
    assert second.count == 1 and budget.waiting == 0


def test_a_small_claim_passes_a_large_one_that_does_not_fit():
    budget = BodyBudget(100)
    budget.take(70)
    large, small = Granted(), Granted()
    budget.wait(large, 60)
    budget.wait(small, 20)
    assert (large.count, small.count) == (0, 1)      # 20 fits beside the 70 held: it does not wait for 60
    budget.give_back(70)
    assert large.count == 1 and budget.held == 80


def test_a_waiter_that_leaves_is_forgotten():
    budget = BodyBudget(100)
    budget.take(100)
    gone = Granted()
    budget.wait(gone, 50)
    budget.forget(gone)
    budget.give_back(100)
    assert gone.count == 0 and budget.held == 0


# --- on connections ----------------------------------------------------------------------

def test_past_the_budget_a_connection_stops_reading_until_bytes_are_given_back():
    shared = Shared(max_body=LIMIT, budget=2 * LIMIT)
    (a, ta), (b, tb), (c, tc) = shared.connect(), shared.connect(), shared.connect()
    body = review_body("a").ljust(LIMIT)
    a.data_received(_head(LIMIT) + body[:1000])
    b.data_received(_head(LIMIT) + body[:1000])
    assert shared.budget.held == 2 * LIMIT and ta.reading and tb.reading
    c.data_received(_head(LIMIT))
    assert not tc.reading and tc.buffer == b""       # back-pressure: no error, no answer, no reading
    a.data_received(body[1000:])
    assert answers(ta.buffer)[0].status == 200
    assert tc.reading and shared.budget.held == 2 * LIMIT       # a's bytes went to c
    c.data_received(review_body("c").ljust(LIMIT))
    assert answers(tc.buffer)[0].json()["response"]["uid"] == "c"


def test_a_small_admission_call_is_not_held_behind_large_bodies_that_wait():
    shared = Shared(max_body=LIMIT, budget=2 * LIMIT + 8192)
    hostile = [shared.connect() for _ in range(4)]
    for conn, _ in hostile:
        conn.data_received(_head(LIMIT) + b" " * 100)           # large bodies, trickled
    assert [t.reading for _, t in hostile] == [True, True, False, False]
    call, t = shared.connect()
    call.data_received(post(review_body("pod")))
    assert answers(t.buffer)[0].json()["response"]["uid"] == "pod"


def test_a_connection_waiting_for_the_budget_longer_than_the_idle_timeout_gets_a_503():
    shared = Shared(max_body=LIMIT, budget=LIMIT, idle=30.0, body_timeout=60.0)
    (a, _), (b, tb) = shared.connect(), shared.connect()
    a.data_received(_head(LIMIT) + b" ")
    before = refused("busy")
    b.data_received(_head(LIMIT))
    for _ in range(31):
        shared.loop.advance(1.0)
        a.data_received(b" ")                        # a keeps trickling, within its deadlines
    answer = answers(tb.buffer)[0]
    assert answer.status == 503 and "server.bodyBudgetBytes" in answer.json()["error"] and tb.ended
    assert refused("busy") == before + 1 and shared.budget.waiting == 0


def test_the_body_timeout_counts_from_the_grant_not_from_the_wait():
    shared = Shared(max_body=LIMIT, budget=LIMIT, idle=30.0, body_timeout=10.0)
    (a, ta), (b, tb) = shared.connect(), shared.connect()
    a.data_received(_head(LIMIT) + b" ")
    b.data_received(_head(LIMIT))
    shared.loop.advance(10.5)                       # a's body is late: 408, and b is granted now
    assert answers(ta.buffer)[0].status == 408 and tb.reading
    b.data_received(b" " * 100)
    shared.loop.advance(9.0)
    assert tb.buffer == b""                          # 9 s since its grant, 19.5 s since its head
    shared.loop.advance(1.5)
    assert answers(tb.buffer)[0].status == 408


def test_a_chunked_body_claims_the_limit_and_gives_back_what_it_did_not_use():
    shared = Shared(max_body=LIMIT, budget=4 * LIMIT)
    conn, t = shared.connect()
    conn.data_received(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n")
    assert shared.budget.held == LIMIT
    conn.data_received(chunked(review_body("small")))
    assert answers(t.buffer)[0].status == 200 and shared.budget.held == 0


def test_a_body_over_the_limit_holds_no_budget_while_it_is_drained():
    shared = Shared(max_body=LIMIT)
    conn, t = shared.connect()
    conn.data_received(_head(3 * LIMIT) + b" " * LIMIT)
    assert shared.budget.held == 0
    conn.data_received(b" " * 2 * LIMIT)
    assert answers(t.buffer)[0].status == 413


def test_a_closed_connection_gives_back_what_it_held_and_leaves_the_queue():
    shared = Shared(max_body=LIMIT, budget=LIMIT)
    (a, _), (b, _) = shared.connect(), shared.connect()
    a.data_received(_head(LIMIT) + b" ")
    b.data_received(_head(LIMIT))
    b.connection_lost(None)
    a.connection_lost(None)
    assert shared.budget.held == 0 and shared.budget.waiting == 0


def test_100_continue_waits_for_the_budget():
    shared = Shared(max_body=LIMIT, budget=LIMIT)
    (a, _), (b, tb) = shared.connect(), shared.connect()
    a.data_received(post(review_body("a")).replace(b"Content-Length: ", b"X-A: 1\r\nContent-Length: ")[:-10])
    b.data_received(_head(LIMIT, extra=b"Expect: 100-continue\r\n"))
    assert tb.buffer == b""
    a.data_received(post(review_body("a"))[-10:])
    assert tb.buffer == b"HTTP/1.1 100 Continue\r\n\r\n"


def test_the_tls_layer_reads_ahead_only_a_little_for_a_connection_that_does_not_read():
    _, t = Shared().connect()
    assert t.read_limit == READ_AHEAD


# --- the settings ------------------------------------------------------------------------

def test_a_budget_smaller_than_the_largest_body_is_refused_in_the_file_flags_and_environment():
    import pytest

    from webhook import config as config_mod
    from webhook.cli import build_parser
    from webhook.commands.serve import server_settings
    with pytest.raises(config_mod.ConfigError) as in_file:
        config_mod.from_dict({"server": {"maxBodyBytes": 2048, "bodyBudgetBytes": 1024}})
    assert any("server.bodyBudgetBytes" in p and "at least server.maxBodyBytes (2048)" in p
               for p in in_file.value.problems)
    cfg = config_mod.load(None)
    with pytest.raises(config_mod.ConfigError):
        server_settings(cfg, build_parser().parse_args(["serve", "--body-budget-bytes", "4096"]), environ={})
    with pytest.raises(config_mod.ConfigError):
        server_settings(cfg, build_parser().parse_args(["serve"]), environ={"WW_BODY_BUDGET_BYTES": "4096"})
    settings = server_settings(cfg, build_parser().parse_args(["serve", "--body-timeout", "2.5"]),
                               environ={"WW_BODY_BUDGET_BYTES": "8388608"})
    assert (settings.bodyBudgetBytes, settings.bodyTimeoutSeconds) == (8388608, 2.5)
