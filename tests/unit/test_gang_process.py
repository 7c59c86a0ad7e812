"""The live gang model in the bridge's process (webhook/server/bridge_process.py): started only
when `gangs.model` is on, on the bridge's Lease and identity: holding it alone, following the
bridge's loop (reading, never writing) when a dialect is on; a dead process's gauges dropped."""
from __future__ import annotations

import json
import os

from webhook import config as config_mod
from webhook.bridge.loop import Bridge
from webhook.gangs.model import Following, Runner
from webhook.server import bridge_process


def argv(cfg: dict) -> list[str]:
    c = config_mod.from_dict(cfg)
    return bridge_process.Supervisor("disabled", None, c.bridge, "info", "json", c.gangs).argv


def test_the_supervisor_passes_the_model_settings_only_when_it_is_on():
    on = argv({"gangs": {"model": True, "eventsPerMinute": 30}})
    assert json.loads(on[on.index("--gangs") + 1]) == {"model": True, "eventsPerMinute": 30, "eventsBurst": 30}
    assert "--gangs" not in argv({}) and "--gangs" not in argv({"gangs": {"model": False}})


def test_alone_the_model_holds_the_lease_beside_a_dialect_it_follows_the_bridges():
    settings = json.dumps({"model": True, "eventsPerMinute": 60, "eventsBurst": 5})
    alone = Bridge(None, config_mod.from_dict({}).bridge, identity="me")
    runner = bridge_process._gang_runner(None, alone, settings)
    assert isinstance(runner, Runner) and runner.lease is alone.lease and runner.model.instance == "me"
    both = Bridge(None, config_mod.from_dict({"bridge": {"volcano": True}}).bridge, identity="me")
    runner = bridge_process._gang_runner(None, both, settings)
    assert isinstance(runner.lease, Following) and runner.lease.lease is both.lease
    assert bridge_process._gang_runner(None, alone, None) is None


class ReadOnly:
    identity = "me"

    def __init__(self, holder):
        self._holder = holder

    def holder(self):
        return self._holder


def test_following_holds_while_the_lease_names_this_process():
    assert Following(ReadOnly("me")).try_hold() is True
    assert Following(ReadOnly("another")).try_hold() is False
    assert Following(ReadOnly(None)).try_hold() is False


def test_a_dead_process_gauges_leave_the_multiprocess_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    s = bridge_process.Supervisor("disabled", None, config_mod.from_dict({}).bridge, "info", "json")

    class Proc:
        pid = 424242
    s.proc = Proc()
    (tmp_path / "gauge_livemax_424242.db").write_bytes(b"")
    (tmp_path / "counter_424242.db").write_bytes(b"")
    s._forget()
    assert sorted(os.listdir(tmp_path)) == ["counter_424242.db"]


class Cluster:
    """A transport of the test's own answering as kube-apiserver would: the PodGroups and Pods
    listed, watches that stay open (quietly), Events recorded."""

    def __init__(self, podgroups, pods, deliver=(), ready=lambda: True):
        import threading
        self.lists = {"/apis/scheduling.k8s.io/v1beta1/podgroups": podgroups, "/api/v1/pods": pods}
        self.deliver = list(deliver)        # watch events for the Pods, sent once `ready()`
        self.ready = ready
        self.events, self.stop = [], threading.Event()

    def send(self, method, path, query, headers, body, timeout):
        from tests.unit.test_list_watch import Reply, lines, page
        q = dict(query)
        if method == "POST" and path.endswith("/events"):
            self.events.append(json.loads(body) if isinstance(body, (bytes, str)) else body)
            return Reply(201, b"{}")
        if path not in self.lists:
            return Reply(404, b"{}")
        if q.get("watch") == "true":
            send = lines(*self.deliver) if path == "/api/v1/pods" and self.ready() else []
            if send:
                self.deliver = []

            class Quiet(Reply):
                def chunks(inner):
                    yield from send
                    self.stop.wait(0.2)
            return Quiet(200)
        return Reply(200, page(self.lists[path], 5))


def test_the_runner_leads_lists_and_says_each_change_on_the_podgroup():
    import threading
    import time
    from tests.unit.test_gang_store import pod, podgroup
    from webhook.cluster.api import Api
    runner = None
    cluster = Cluster([podgroup("g", 4)], [pod(f"p{i}") for i in range(3)],
                      deliver=[{"type": "ADDED", "object": pod("p3", rv=9)}],
                      ready=lambda: runner is not None and runner.model.primed)

    class Held:
        identity = "me"

        def try_hold(self):
            return True

        def release(self):
            pass
    runner = Runner(Api(cluster), config_mod.from_dict({"gangs": {"model": True}}).gangs, Held(), 15, "me")
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(e["reason"] == "GangWaitingForCapacity" for e in cluster.events):
            time.sleep(0.1)
    finally:
        stop.set()
        cluster.stop.set()
        thread.join(10)
    said = [(e["reason"], e["regarding"]["name"], e["reportingInstance"]) for e in cluster.events]
    # the gang listed short of members was already there: taken as said; the fourth Pod's arrival is a change
    assert said == [("GangWaitingForCapacity", "g", "me")], said
    assert cluster.events[0]["metadata"]["namespace"] == "ml"
