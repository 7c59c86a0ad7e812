"""The gang model's stores (webhook/gangs/store.py), fed bytes by the one list-and-watch loop
through a transport of the test's own (as tests/unit/test_list_watch.py), and the model's step
(webhook/gangs/model.py) on them: Events said once per state, rate-limited, and the metrics."""
from __future__ import annotations

import json

from prometheus_client import REGISTRY

from tests.unit.test_list_watch import Recording, Reply, Transport, lines, page
from webhook.cluster.api import Api
from webhook.config import GangSettings
from webhook.gangs import state as sm
from webhook.gangs.model import SETTLE, Model
from webhook.gangs.store import Gangs, PodGroupStore, PodStore, group_of, member_of


def podgroup(name, min_count=4, rv=1, conditions=(), gang=True, ns="ml"):
    spec = {"schedulingPolicy": {"gang": {"minCount": min_count}} if gang else {"basic": {}}}
    return {"metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": str(rv),
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": spec, "status": {"conditions": list(conditions)}}


def pod(name, group="g", phase="Pending", node=None, reason=None, rv=1, ns="ml", deleting=False):
    spec = {"containers": [{"name": "c", "image": "x"}], **({"schedulingGroup": {"podGroupName": group}} if group else {})}
    if node:
        spec["nodeName"] = node
    status = {"phase": phase}
    if reason:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": reason, "message": "words"}]
    meta = {"name": name, "namespace": ns, "resourceVersion": str(rv),
            **({"deletionTimestamp": "2026-01-01T00:01:00Z"} if deleting else {})}
    return {"metadata": meta, "spec": spec, "status": status}


def feed(store, *script, path="/api/v1/pods"):
    t = Transport(*script)
    loop = Recording(Api(t), path, store, watch_seconds=7)
    t.loop = loop
    loop.run()
    return loop


def test_projection_keeps_what_the_state_machine_needs_and_reads_reasons_from_data():
    g = group_of(podgroup("g", 3, conditions=[{"type": "PodGroupInitiallyScheduled", "status": "False",
                                                "reason": "Unschedulable", "message": "0/3 nodes are available"}]))
    assert (g.min_count, g.condition, g.reason, g.uid) == (3, "False", "Unschedulable", "uid-g")
    assert g.created == 1767225600.0
    assert group_of(podgroup("b", gang=False)) is None
    assert member_of(pod("p", node="n1", phase="Running", reason="Unschedulable")) == \
        ("g", sm.GangMember("Running", "n1", "Unschedulable"))
    assert member_of(pod("p", group=None)) is None


def test_pods_through_list_and_watch_into_their_groups():
    gangs = Gangs()
    store = PodStore(gangs)
    feed(store, Reply(200, page([pod("a"), pod("b"), pod("x", group=None)], 5)),
         Reply(200, chunks=lines({"type": "ADDED", "object": pod("c", rv=6)},
                                 {"type": "MODIFIED", "object": pod("a", phase="Running", node="n1", rv=7)},
                                 {"type": "DELETED", "object": pod("b", rv=8)})))
    assert store.synced and store.resource_version == "8"
    members = gangs.members[("ml", "g")]
    assert sorted(members) == ["a", "c"] and members["a"] == sm.GangMember("Running", "n1")
    assert len(store.objects) == 2 and ("ml", "g") in gangs.take_dirty() and not gangs.take_dirty()


def test_a_relist_drops_the_pods_deleted_while_nobody_watched():
    gangs = Gangs()
    store = PodStore(gangs)
    feed(store, Reply(200, page([pod("a"), pod("b", group="h")], 5)),
         Reply(410, b'{"code":410}'), Reply(200, page([pod("a")], 9)))
    assert list(gangs.members) == [("ml", "g")] and store.resource_version == "9"


def test_equal_members_are_one_object():
    gangs = Gangs()
    PodStore(gangs).add([pod(f"p{i}", phase="Running", node="n1") for i in range(50)])
    assert len({id(m) for m in gangs.members[("ml", "g")].values()}) == 1


def test_podgroups_without_a_gang_policy_are_not_kept_and_an_error_event_relists():
    gangs = Gangs()
    store = PodGroupStore(gangs)
    loop = feed(store, Reply(200, page([podgroup("g"), podgroup("b", gang=False)], 3)),
                Reply(200, chunks=lines({"type": "ERROR", "object": {"kind": "Status", "code": 410}})),
                Reply(200, page([podgroup("g", 5)], 10)), path="/apis/scheduling.k8s.io/v1beta1/podgroups")
    assert list(gangs.groups) == [("ml", "g")] and gangs.groups[("ml", "g")].min_count == 5 and loop.relists == 2


class Clock:
    def __init__(self):
        self.now = 1767225600.0 + 10

    def __call__(self):
        return self.now


def sample(name, labels=None):
    return REGISTRY.get_sample_value(name, labels or {})


def model(per_minute=120, burst=30):
    written = []
    clock = Clock()
    m = Model(GangSettings(model=True, eventsPerMinute=per_minute, eventsBurst=burst),
              write=lambda ns, ev: written.append(ev), clock=clock)
    m.step()                                 # primed on an empty cluster
    return m, written, clock


def settle(m, clock):
    """The model sees the change, and the state holds SETTLE seconds."""
    m.step()
    clock.now += SETTLE + 0.01
    m.step()


def test_a_gang_short_of_members_is_said_once_with_its_counts_then_its_transitions():
    m, written, clock = model()
    groups, pods = PodGroupStore(m.gangs), PodStore(m.gangs)
    groups.add([podgroup("g", 4)])
    pods.add([pod(f"p{i}") for i in range(3)])
    m.step()
    assert written == []                     # not yet settled: a burst of Pods is one Event
    settle(m, clock)
    assert [(e["reason"], e["note"], e["type"]) for e in written] == \
        [("GangWaitingForMembers", "gang waiting for members 3/4; minCount 4", "Normal")]
    assert written[0]["regarding"] == {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                       "name": "g", "namespace": "ml", "uid": "uid-g"}
    assert sample("workload_webhook_gangs", {"state": "waiting_for_members"}) == 1
    settle(m, clock)
    assert len(written) == 1                 # nothing changed: nothing more said
    before = sample("workload_webhook_gang_quorum_seconds_count") or 0
    pods.add([pod(f"p{i}", phase="Running", node="n1") for i in range(4)])
    groups.add([podgroup("g", 4, rv=2, conditions=[{"type": "PodGroupInitiallyScheduled", "status": "True",
                                                     "reason": "Scheduled"}])])
    settle(m, clock)
    assert written[-1]["reason"] == "GangScheduled"
    assert sample("workload_webhook_gang_quorum_seconds_count") == before + 1
    pods.apply({"type": "DELETED", "object": pod("p3", phase="Running", node="n1")})     # evicted
    settle(m, clock)
    assert (written[-1]["reason"], written[-1]["type"]) == ("GangDegraded", "Warning")
    assert written[-1]["note"].startswith("gang degraded: 3/4")
    assert sample("workload_webhook_gangs", {"state": "degraded"}) == 1
    assert sample("workload_webhook_gangs", {"state": "scheduled"}) == 0


def test_gangs_found_at_the_first_list_are_taken_as_said():
    written = []
    clock = Clock()
    m = Model(GangSettings(model=True), write=lambda ns, ev: written.append(ev), clock=clock)
    PodGroupStore(m.gangs).add([podgroup("old", 2)])
    m.step()
    settle(m, clock)
    assert written == [] and m.status(("ml", "old")).state == sm.WAITING_FOR_MEMBERS


def test_a_burst_of_gangs_is_said_at_the_bounded_rate_and_each_latest_state_is_said():
    m, written, clock = model(per_minute=60, burst=10)
    PodGroupStore(m.gangs).add([podgroup(f"g{i}", 2) for i in range(1000)])
    settle(m, clock)
    assert len(written) == 10                # the burst
    clock.now += 5                           # 60 a minute: 5 more tokens
    m.step()
    assert len(written) == 15
    assert len({e["regarding"]["name"] for e in written}) == 15


def test_gangs_that_keep_changing_do_not_take_every_token_from_the_rest():
    m, written, clock = model(per_minute=60, burst=1)           # a token a second
    groups, pods = PodGroupStore(m.gangs), PodStore(m.gangs)
    churning = [f"a{i}" for i in range(4)]                      # changing again and again
    groups.add([podgroup(n, 4) for n in churning] + [podgroup("late", 4)])
    for step in range(12):
        for n in churning[step % 2::2]:          # half of them change, the other half's last change has held
            if step // 2 % 2 == 0:
                pods.add([pod(f"{n}-x", group=n)])
            else:
                pods.apply({"type": "DELETED", "object": pod(f"{n}-x", group=n)})
        m.step()
        clock.now += SETTLE + 0.01
    said = [e["regarding"]["name"] for e in written]
    assert len(said) <= 12 + 1                                  # still the bounded rate
    assert set(said) == set(churning) | {"late"}, said          # every gang had its turn


def test_a_deleted_podgroup_leaves_the_model():
    m, written, clock = model()
    groups = PodGroupStore(m.gangs)
    groups.add([podgroup("g", 2)])
    settle(m, clock)
    groups.apply({"type": "DELETED", "object": podgroup("g", 2)})
    m.step()
    assert m.status(("ml", "g")) is None and sample("workload_webhook_gangs", {"state": "waiting_for_members"}) == 0
