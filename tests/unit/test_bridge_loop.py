"""The bridge loop's pure parts: the Lease decision, the watch store (relists report
what vanished), the work queue, the index of the Pods it joined, and its settings.
The loop itself runs against a real API server (tests/e2e/test_bridge.py)."""
import time

import pytest

from webhook import config as config_mod
from webhook.bridge import lease, loop
from webhook.foreign.dialects import BRIDGE_LABEL
from webhook.bridge.watch import RELIST, BridgeStore


@pytest.mark.parametrize("spec,seen,want", [
    (None, 0, lease.CREATE),
    ({"holderIdentity": "me", "leaseDurationSeconds": 15}, 0, lease.RENEW),
    ({"holderIdentity": "other", "leaseDurationSeconds": 15}, 14.9, lease.WAIT),
    ({"holderIdentity": "other", "leaseDurationSeconds": 15}, 15, lease.TAKE),     # unchanged for a whole Lease
    ({"holderIdentity": "other", "leaseDurationSeconds": 60}, 20, lease.WAIT),     # the holder's duration counts
    ({"holderIdentity": None, "leaseDurationSeconds": 1}, 0, lease.TAKE),          # released
    ({}, 0, lease.TAKE),
])
def test_the_lease_is_taken_only_from_a_holder_that_stopped_renewing(spec, seen, want):
    assert lease.decide(spec, "me", seen, 15) == want


def test_a_lease_time_is_rfc3339_with_microseconds():
    stamp = lease.now_micro()
    assert len(stamp) == 27 and stamp.endswith("Z") and stamp[19] == "."


def obj(name, ns="ml", rv="1", **extra):
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv}, **extra}


def test_the_store_reports_each_change_once_and_what_a_relist_no_longer_lists():
    seen = []
    store = BridgeStore(lambda o: {"metadata": {"name": o["metadata"]["name"], "namespace": o["metadata"]["namespace"]},
                             "spec": o.get("spec")}, lambda old, new: seen.append((old is not None, new is not None)))
    store.replace([obj("a", spec=1), obj("b", spec=1)], "10")
    assert store.synced and store.resource_version == "10" and seen == [(False, True), (False, True)]
    seen.clear()
    assert store.apply({"type": "MODIFIED", "raw_object": obj("a", rv="11", spec=1)}) is None
    assert seen == []                                        # only the resourceVersion moved: no change
    store.apply({"type": "MODIFIED", "raw_object": obj("a", rv="12", spec=2)})
    store.apply({"type": "DELETED", "raw_object": obj("b", rv="13")})
    assert seen == [(True, True), (True, False)] and store.resource_version == "13"
    seen.clear()
    store.replace([obj("c")], "20")                          # "a" went while nobody watched
    assert sorted(store.objects) == [("ml", "c")] and seen == [(True, False), (False, True)]


@pytest.mark.parametrize("event", [{"type": "ERROR", "raw_object": {"code": 410}}, {"type": "ADDED"},
                                   {"type": "SURPRISE", "raw_object": obj("a")}])
def test_the_store_relists_on_an_error_or_an_unreadable_event(event):
    assert BridgeStore(dict, lambda o, n: None).apply(event) == RELIST


def test_the_queue_holds_a_key_once_and_retries_later():
    q = loop.WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b", after=0.05)
    assert q.get(0.01) == "a" and q.get(0.01) is None
    t0 = time.monotonic()
    assert q.get(2) == "b" and time.monotonic() - t0 < 2


def bridged_pod(name, group="train", dialect="coscheduling", **spec):
    return {"metadata": {"name": name, "namespace": "ml", "labels": {BRIDGE_LABEL: dialect}},
            "spec": {"schedulingGroup": {"podGroupName": group}, **spec}, "status": {"phase": "Pending"}}


def test_the_loop_indexes_the_pods_it_joined_by_group_and_queues_their_group():
    settings = config_mod.from_dict({"bridge": {"coscheduling": True}}).bridge
    b = loop.Bridge(None, settings, identity="me", environ={"POD_NAMESPACE": "ww"})
    b._pod_changed(None, loop.project_pod(bridged_pod("p0")))
    b._pod_changed(None, loop.project_pod(bridged_pod("p1", nodeName="n1")))
    assert sorted(b.members[("ml", "train")]) == ["p0", "p1"]
    assert b.queue.get(0.01) == ("coscheduling", "ml", "train") and b.queue.get(0.01) is None
    b._pod_changed(loop.project_pod(bridged_pod("p0")), None)
    b._pod_changed(loop.project_pod(bridged_pod("p1")), None)
    assert ("ml", "train") not in b.members
    assert b.lease.namespace == "ww" and b.lease.name == "workload-webhook-bridge"


def test_a_pod_without_the_bridge_label_or_a_group_is_no_member():
    assert loop.group_of_pod(bridged_pod("p", dialect="other")) is None
    assert loop.group_of_pod({"metadata": {"name": "p", "labels": {BRIDGE_LABEL: "volcano"}}, "spec": {}}) is None


def test_the_lease_namespace_is_configured_else_the_pods_own_else_default(tmp_path):
    sa = tmp_path / "namespace"
    assert loop.lease_namespace("set", {"POD_NAMESPACE": "env"}, str(sa)) == "set"
    assert loop.lease_namespace("", {"POD_NAMESPACE": "env"}, str(sa)) == "env"
    assert loop.lease_namespace("", {}, str(sa)) == "default"
    sa.write_text("from-sa\n")
    assert loop.lease_namespace("", {}, str(sa)) == "from-sa"


def test_the_bridge_config_is_off_by_default_and_checked():
    assert config_mod.from_dict({}).bridge.dialects == ()
    on = config_mod.from_dict({"bridge": {"volcano": True, "schedulerNames": ["volcano"],
                                          "lease": {"name": "ww-bridge", "namespace": "ww", "durationSeconds": 20},
                                          "resyncSeconds": 60}}).bridge
    assert (on.dialects, on.schedulerNames, on.leaseName, on.leaseNamespace, on.leaseDurationSeconds,
            on.resyncSeconds) == (("volcano",), ("volcano",), "ww-bridge", "ww", 20, 60)
    with pytest.raises(config_mod.ConfigError) as bad:
        config_mod.from_dict({"bridge": {"coschedulng": True, "lease": {"namespace": "Not_A_Label"}}})
    text = str(bad.value)
    assert 'unknown field "bridge.coschedulng"' in text
    with pytest.raises(config_mod.ConfigError) as bad:
        config_mod.from_dict({"bridge": {"lease": {"namespace": "Not_A_Label"}}})
    assert "bridge.lease.namespace" in str(bad.value)
