"""The one list-and-watch loop (webhook/cluster/watch.py) and the API layer under it
(webhook/cluster/api.py), fed bytes through a transport of the test's own: each
request gets the status and the body bytes (a watch's body in chunks, as the HTTP
response stream delivers them). The loop against a real kube-apiserver, a real
410 included, is tests/e2e/test_cluster_cache.py."""
from __future__ import annotations

import json

import pytest

from webhook.bridge.watch import BridgeStore
from webhook.cluster.api import Api
from webhook.cluster.store import PackedStore
from webhook.view import ClusterUnavailable
from webhook.cluster.watch import BACKOFF_MAX, ListWatch

PATH = "/apis/scheduling.k8s.io/v1beta1/podgroups"


def pg(name, rv):
    return {"metadata": {"name": name, "namespace": "ml", "resourceVersion": str(rv)}, "spec": {}}


def page(items, rv, token=None):
    return json.dumps({"metadata": {"resourceVersion": str(rv), **({"continue": token} if token else {})},
                       "items": items}).encode()


def lines(*events) -> list[bytes]:
    return [json.dumps(e).encode() + b"\n" for e in events]


class Reply:
    def __init__(self, status, body=b"", chunks=()):
        self.status, self.reason, self._body, self._chunks = status, "Reason", body, list(chunks)
        self.closed = False

    def read(self):
        return self._body

    def chunks(self):
        yield from self._chunks

    def close(self):
        self.closed = True


class Transport:
    """Answers each request with the next scripted reply (or raises it); once the script is
    done it stops the loop and ends the watch."""

    def __init__(self, *script):
        self.script, self.requests, self.loop = list(script), [], None

    def send(self, method, path, query, headers, body, timeout):
        self.requests.append((method, path, dict(query), timeout))
        if not self.script:           # the script is done: the loop stops (a watch ends, a LIST fails)
            self.loop.stop()
            if dict(query).get("watch") == "true":
                return Reply(200)
            raise ConnectionAbortedError("the test is over")
        answer = self.script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


def run(transport, store=None, **kw):
    loop = Recording(Api(transport), PATH, store if store is not None else PackedStore(), watch_seconds=7, **kw)
    transport.loop = loop
    loop.run()                        # in this thread: it returns once the script is done
    return loop


class Recording(ListWatch):
    def _pause(self, seconds):
        if not self.stopped.is_set():
            self.pauses.append(seconds)


def watches(transport):
    return [q for _, _, q, _ in transport.requests if q.get("watch") == "true"]


def lists(transport):
    return [q for _, _, q, _ in transport.requests if "watch" not in q]


def test_a_410_error_event_relists_and_the_watch_resumes_from_the_new_list():
    t = Transport(Reply(200, page([pg("a", 4)], 5)),
                  Reply(200, chunks=lines({"type": "ADDED", "object": pg("b", 6)},
                                          {"type": "ERROR", "object": {"kind": "Status", "code": 410}})),
                  Reply(200, page([pg("a", 4), pg("c", 9)], 10)))
    loop = run(t)
    assert [q["resourceVersion"] for q in watches(t)] == ["5", "10"]
    assert len(lists(t)) == 2 and loop.relists == 2
    assert sorted(loop.store.objects) == ["ml/a", "ml/c"]      # b vanished while the watch was gone
    assert loop.pauses == []                                   # a 410 relists at once


def test_a_watch_answered_410_relists_too():
    t = Transport(Reply(200, page([], 5)), Reply(410, b'{"code":410}'), Reply(200, page([pg("a", 1)], 11)))
    loop = run(t)
    assert loop.relists == 2 and loop.store.resource_version == "11" and loop.store.get("ml", "a")


def test_bookmarks_move_the_resource_version_on_without_a_list():
    t = Transport(Reply(200, page([pg("a", 4)], 5)),
                  Reply(200, chunks=lines({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}})),
                  Reply(200, chunks=lines({"type": "MODIFIED", "object": pg("a", 21)})))
    loop = run(t)
    assert [q["resourceVersion"] for q in watches(t)][:2] == ["5", "20"]
    assert loop.bookmarks == 1 and loop.relists == 1 and loop.store.resource_version == "21"
    assert all(q["allowWatchBookmarks"] == "true" and q["timeoutSeconds"] == 7 for q in watches(t))


def test_an_event_split_across_chunks_is_read_whole():
    event = json.dumps({"type": "ADDED", "object": pg("b", 6)}).encode() + b"\n"
    t = Transport(Reply(200, page([], 5)), Reply(200, chunks=[event[:10], event[10:30], event[30:]]))
    loop = run(t)
    assert loop.store.get("ml", "b") is not None and loop.store.resource_version == "6"


def test_an_unreadable_event_relists_after_a_pause():
    t = Transport(Reply(200, page([], 5)), Reply(200, chunks=[b"{not json\n"]), Reply(200, page([], 8)))
    loop = run(t)
    assert loop.relists == 2 and loop.pauses == [0.5]


def test_backoff_doubles_and_is_bounded():
    t = Transport(*[ConnectionRefusedError("refused")] * 10)
    loop = run(t)
    assert loop.pauses == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, BACKOFF_MAX, BACKOFF_MAX, BACKOFF_MAX, BACKOFF_MAX]
    assert not loop.store.synced


def test_a_watch_that_delivered_starts_the_backoff_over():
    t = Transport(ConnectionResetError(), Reply(200, page([], 5)),
                  Reply(200, chunks=lines({"type": "ADDED", "object": pg("a", 6)})), ConnectionResetError(),
                  ConnectionResetError())
    loop = run(t)
    # refused (0.5); listed, watched, ended healthy, the next watch fails: 0.5 again; the LIST fails: 1
    assert loop.pauses == [0.5, 0.5, 1.0]


def test_the_list_deadline_is_honoured_and_the_store_keeps_what_it_had():
    now = [0.0]

    def clock():
        now[0] += 400.0            # each look at the clock: 400 s later
        return now[0]
    t = Transport(*[Reply(200, page([pg(f"p{i}", i)], 1, token=f"t{i}")) for i in range(5)])
    api = Api(t)
    with pytest.raises(ClusterUnavailable, match="took over 900 s"):
        for _ in api.pages(PATH, page_size=1, deadline=900.0, clock=clock):
            pass
    assert [q.get("continue") for q in lists(t)] == [None, "t0", "t1"]      # no page asked past the deadline
    assert all(q["limit"] == 1 for q in lists(t))


def test_a_list_past_its_deadline_leaves_the_loops_store_unsynced_and_backs_off():
    t = Transport(*[Reply(200, page([pg(f"p{i}", i)], 1, token=f"t{i}")) for i in range(3)])
    loop = run(t, list_deadline=0.0)
    assert not loop.store.synced and loop.relists == 0 and loop.pauses[:1] == [0.5]


def test_a_collection_not_served_is_an_empty_complete_list_asked_again_later():
    seen = []
    store = BridgeStore(dict, lambda old, new: seen.append((old, new)))
    store.replace([pg("gone", 1)], "1")
    seen.clear()
    t = Transport(Reply(404, b'{"code":404}'))
    loop = run(t, store=store, not_served_wait=30.0)
    assert store.synced and store.objects == {} and loop.pauses[0] == 30.0
    assert seen == [(pg("gone", 1), None)]


def test_a_failed_page_is_the_clients_api_exception():
    from kubernetes.client.rest import ApiException
    t = Transport(Reply(403, b'{"message":"forbidden"}'))
    with pytest.raises(ApiException) as caught:
        list(Api(t).pages(PATH))
    assert caught.value.status == 403 and b"forbidden" in caught.value.body


def test_the_served_version_is_the_first_a_list_of_one_finds():
    t = Transport(Reply(404), Reply(200, page([], 1)))
    assert Api(t).served_version("scheduling.k8s.io", "podgroups", ("v1beta1", "v1alpha3")) == "v1alpha3"
    assert [p for _, p, _, _ in t.requests] == [PATH, "/apis/scheduling.k8s.io/v1alpha3/podgroups"]
    assert Api(Transport(Reply(404), Reply(404))).served_version("g", "p", ("v1", "v2")) is None


def test_a_selector_is_sent_with_the_list_and_the_watch():
    t = Transport(Reply(200, page([], 5)))
    loop = Recording(Api(t), "/api/v1/pods", PackedStore(), selector="app=x")
    t.loop = loop
    loop.run()
    assert all(q["labelSelector"] == "app=x" for _, _, q, _ in t.requests)
