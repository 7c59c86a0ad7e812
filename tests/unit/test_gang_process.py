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
