"""Where a review is judged is decided once, in webhook/server/admit.py: at once
in the event loop, or `Later` in the worker's lookup pool when a view call
declared `blocking` (webhook/view.py) would wait for the API server.
The view is the server's real one (ClusterCache) over an API server port where
nothing listens; tests/server/test_unreachable_cluster.py shows the same over
a real server and a silent API server."""
import ast
import inspect
import json
import threading

import pytest
from prometheus_client import REGISTRY

from tests.server.harness import admission_request
from tests.unit.connection_mock import Shared, post, refusing_cache, review_body, waiting_review
from tests.unit.helpers import pod, podgroup
from webhook import config
from webhook.cluster import cache as cache_module
from webhook.view import ClusterUnavailable, Judgment, NeedsNetwork
from webhook.server.admit import Later
from webhook.server.app import State, build_admission


def _methods_asking_the_api_server(cls) -> dict[str, list[str]]:
    """Each method of `cls` (but __init__) whose body reads `self.api`, with its decorators."""
    tree = ast.parse(inspect.getsource(cls))
    out = {}
    for fn in tree.body[0].body:
        if isinstance(fn, ast.FunctionDef) and fn.name != "__init__":
            reads_api = any(isinstance(n, ast.Attribute) and n.attr == "api" and isinstance(n.value, ast.Name)
                            and n.value.id == "self" for n in ast.walk(fn))
            if reads_api:
                out[fn.name] = [ast.unparse(d) for d in fn.decorator_list]
    return out


def test_every_call_of_the_cache_that_asks_the_api_server_is_declared_blocking():
    asking = _methods_asking_the_api_server(cache_module.ClusterCache)
    assert set(asking) >= {"_get", "_read_namespace"}, asking
    assert all("blocking" in decorators for decorators in asking.values()), asking


def test_a_blocking_call_raises_before_it_asks_only_in_a_judgment_that_may_not_wait():
    cache = refusing_cache()
    with Judgment(may_wait=False):
        with pytest.raises(NeedsNetwork):
            cache.workload("ml", "wl")
        with pytest.raises(NeedsNetwork):
            cache.namespace_labels("ml")
    with Judgment(may_wait=True) as judgment, pytest.raises(ClusterUnavailable):
        cache.workload("ml", "wl")             # asked, refused: counted with the judgment
    assert judgment.lookups == [("workloads", "unavailable")]
    with pytest.raises(ClusterUnavailable):
        cache.workload("ml", "wl")             # outside a judgment (the audit): asked as well
    assert not issubclass(NeedsNetwork, ClusterUnavailable)     # the engine must not turn it into a warning


def _counts() -> dict:
    """Every sample of the admission and lookup counters in this process."""
    out = {}
    for family in REGISTRY.collect():
        if family.name in ("workload_webhook_requests", "workload_webhook_cluster_lookups"):
            for s in family.samples:
                if s.name.endswith("_total"):
                    out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _delta(before: dict, after: dict) -> dict:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


def test_a_review_judged_later_answers_and_counts_as_the_same_review_judged_at_once():
    """A Pod joins a PodGroup from the cache (a lookup), conflicts with its claim (POD-4),
    and namespace enforcement then needs the namespace's labels: a GET, blocking. In
    the loop the judgment comes back Later; in the pool the GET fails (remembered for
    5 s), so the same review again is judged at once. Same answer, same counts: the
    PodGroup lookup of the discarded first attempt is not counted."""
    group = podgroup("pg", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t1"}])
    cfg = config.from_dict({"enforcement": {"namespaces": [{"selector": {"matchLabels": {"team": "a"}},
                                                              "action": "warn"}]}})
    admission = build_admission(State(cfg, refusing_cache(group)))
    member = pod({"scheduling.k8s.io/pod-group": "pg"},
                 resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t2"}])
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": admission_request(member, uid="same")}).encode()
    route = admission.route(b"POST", "/mutate")

    before = _counts()
    later = admission.answer(route, body, "application/json")
    assert isinstance(later, Later)
    assert _counts() == before                 # nothing counted for the attempt in the loop
    pooled = {}
    thread = threading.Thread(target=lambda: pooled.setdefault("answer", later.run(lambda: True)))
    thread.start()
    thread.join(30)
    first = _delta(before, _counts())

    before = _counts()
    at_once = admission.answer(route, body, "application/json")
    assert isinstance(at_once, tuple) and at_once[0] == 200
    second = _delta(before, _counts())

    assert pooled["answer"] == at_once
    review = json.loads(at_once[1])["response"]
    assert review["allowed"] is False and "conflicts with claim 'gpu'" in review["status"]["message"]
    assert first == second
    assert first[("workload_webhook_cluster_lookups_total",
                  (("resource", "podgroups"), ("source", "cache")))] == 1.0


def test_a_judgment_whose_client_has_gone_is_not_started():
    shared = Shared(view=refusing_cache())
    conn, transport = shared.connect()
    conn.data_received(post(waiting_review("gone")))
    assert len(shared.loop.pool) == 1 and transport.buffer == b""
    conn.connection_lost(None)
    before = _counts()
    shared.loop.pool.pop().run()
    assert _counts() == before                 # not judged: no request, no Workload lookup counted
    assert transport.buffer == b""


def test_a_judgment_whose_client_waits_is_answered_from_the_pool():
    shared = Shared(view=refusing_cache())
    conn, transport = shared.connect()
    conn.data_received(post(waiting_review("waits")))
    shared.loop.pool.pop().run()
    answer = json.loads(transport.buffer.split(b"\r\n\r\n", 1)[1])["response"]
    assert answer["uid"] == "waits" and answer["allowed"] is True
    assert any("not checked against Workload 'wl'" in w for w in answer["warnings"]), answer


def _in_flight(endpoint: str = "validate") -> float:
    return REGISTRY.get_sample_value("workload_webhook_requests_in_flight", {"endpoint": endpoint}) or 0.0


def test_a_review_is_in_flight_from_its_arrival_until_answered_its_wait_for_the_pool_included():
    """Issue 30: workload_webhook_requests_in_flight. Judged at once: back to what it was; handed
    to the pool: counted from then until the pool has judged it, or found its client gone."""
    shared = Shared(view=refusing_cache())
    conn, transport = shared.connect()
    idle = _in_flight()
    conn.data_received(post(waiting_review("in-flight")))
    assert _in_flight() == idle + 1 and len(shared.loop.pool) == 1
    shared.loop.pool.pop().run()
    assert _in_flight() == idle and b"in-flight" in transport.buffer
    conn.data_received(post(waiting_review("gone-in-flight")))
    assert _in_flight() == idle + 1
    conn.connection_lost(None)
    shared.loop.pool.pop().run()
    assert _in_flight() == idle
    conn, _ = shared.connect()
    conn.data_received(post(b"{not json"))                   # refused at once
    assert _in_flight() == idle


def test_a_review_judged_in_the_loop_never_writes_the_in_flight_gauge(monkeypatch):
    """Issue 36: answered in the turn that read it, it is in flight for no scrape; each of the two
    multiprocess writes it made per Pod cost ~1.5 µs (bench/README.md)."""
    shared = Shared()
    writes = []
    for endpoint, child in shared.admission.metrics.in_flight.items():
        monkeypatch.setattr(child, "inc", lambda amount=1, e=endpoint: writes.append((e, amount)))
        monkeypatch.setattr(child, "dec", lambda amount=1, e=endpoint: writes.append((e, -amount)))
    conn, transport = shared.connect()
    conn.data_received(post(review_body("at-once")))
    conn.data_received(post(review_body("joins", pod({"scheduling.k8s.io/pod-group": "pg"})), "/mutate"))
    assert transport.buffer.count(b"HTTP/1.1 200") == 2 and writes == []
    shared.admission.state.view = refusing_cache()
    conn.data_received(post(waiting_review("later")))
    assert writes == [("validate", 1)]
    shared.loop.pool.pop().run()
    assert writes == [("validate", 1), ("validate", -1)]
