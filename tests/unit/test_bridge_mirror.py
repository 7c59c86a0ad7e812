"""The bridge's pure core: a foreign PodGroup's in-tree mirror and what the reconciler
does about one group (BRG-5), the status it writes back (BRG-6), and the warnings on a
foreign PodGroup's create (BRG-1)."""
import copy

import pytest

from webhook import engine
from webhook.foreign import mirror as m
from webhook.foreign import status as st
from webhook.foreign.dialects import BRIDGE_LABEL, COSCHEDULING, VOLCANO
from tests.unit.helpers import config


def foreign(d=COSCHEDULING, name="train", uid="u1", status=None, **spec):
    obj = {"apiVersion": d.api_version, "kind": "PodGroup",
           "metadata": {"name": name, "namespace": "ml", "uid": uid}, "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


def member(name, phase="Pending", node=None, deleting=False):
    p = {"metadata": {"name": name, "namespace": "ml"}, "spec": {"schedulingGroup": {"podGroupName": "train"}},
         "status": {"phase": phase}}
    if node:
        p["spec"]["nodeName"] = node
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    return p


def mirror_of(f, d=COSCHEDULING, conditions=None, **meta):
    out = m.mirror_for(d, f)
    out["metadata"].update(meta)
    if conditions is not None:
        out["status"] = {"conditions": conditions}
    return out


def verbs(actions):
    return [(a.verb, a.reason) for a in actions]


# ------------------------------------------------------------------ the mirror (BRG-5)

def test_BRG_5_the_mirror_is_a_gang_of_min_member_labelled_and_owned_by_the_foreign_object():
    body = m.mirror_for(COSCHEDULING, foreign(minMember=4, scheduleTimeoutSeconds=30))
    assert body == {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": "train", "namespace": "ml", "labels": {BRIDGE_LABEL: "coscheduling"},
                                 "ownerReferences": [{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                                      "name": "train", "uid": "u1", "controller": True}]},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}}


@pytest.mark.parametrize("spec,count", [({}, 1), ({"minMember": 0}, 1), ({"minMember": -3}, 1),
                                        ({"minMember": True}, 1), ({"minMember": 2**40}, 2**31 - 1),
                                        ({"minMember": 7}, 7)])
def test_BRG_5_min_count_is_min_member_at_least_one(spec, count):
    assert m.min_count(foreign(VOLCANO, **spec)) == count


def test_BRG_5_volcanos_priority_class_is_copied_coschedulings_has_none():
    body = m.mirror_for(VOLCANO, foreign(VOLCANO, minMember=2, priorityClassName="high", queue="default"))
    assert body["spec"] == {"schedulingPolicy": {"gang": {"minCount": 2}}, "priorityClassName": "high"}
    assert body["metadata"]["ownerReferences"][0]["apiVersion"] == "scheduling.volcano.sh/v1beta1"


def test_BRG_5_a_missing_mirror_is_created_and_said_with_what_is_not_mirrored():
    f = foreign(VOLCANO, minMember=3, queue="gpu", minTaskMember={"worker": 2})
    actions = m.plan(m.Group(VOLCANO, f, None), None)
    assert verbs(actions) == [("create", ""), ("event", "Mirrored"), ("event", "NotMirrored")]
    assert actions[0].body == m.mirror_for(VOLCANO, f)
    assert actions[2].warning and "spec.queue" in actions[2].body and "spec.minTaskMember" in actions[2].body


def test_BRG_5_the_mirror_follows_min_member():
    f = foreign(minMember=6)
    actions = m.plan(m.Group(COSCHEDULING, f, mirror_of(foreign(minMember=4))), None)
    assert [(a.verb, a.body) for a in actions] == [("minCount", 6)]


def test_BRG_5_a_current_mirror_needs_nothing():
    f = foreign(minMember=4)
    assert m.plan(m.Group(COSCHEDULING, f, mirror_of(f)), None) == []


@pytest.mark.parametrize("change", [
    lambda pg: pg["metadata"].pop("labels"),                                        # someone's own PodGroup
    lambda pg: pg["metadata"]["labels"].update({BRIDGE_LABEL: "volcano"}),          # the other dialect's
    lambda pg: pg["metadata"]["ownerReferences"][0].update(kind="TrainJob"),        # owned by something else
    lambda pg: pg["metadata"]["ownerReferences"][0].update(controller=False),
])
def test_BRG_5_an_in_tree_podgroup_the_bridge_did_not_create_is_never_touched(change):
    f = foreign(minMember=6)
    theirs = mirror_of(foreign(minMember=2))
    change(theirs)
    actions = m.plan(m.Group(COSCHEDULING, f, theirs), {"phase": "Running"})
    assert verbs(actions) == [("event", "MirrorConflict")] and actions[0].warning


def test_BRG_5_a_mirror_of_an_earlier_object_of_that_name_is_deleted_then_made_again():
    old = mirror_of(foreign(uid="u0", minMember=2), uid="mirror-uid")
    actions = m.plan(m.Group(COSCHEDULING, foreign(uid="u1", minMember=5), old), None)
    assert verbs(actions) == [("delete", "mirror-uid")]
    old["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    assert m.plan(m.Group(COSCHEDULING, foreign(uid="u1"), old), None) == []       # wait until it is gone


@pytest.mark.parametrize("f", [None, {**foreign(), "metadata": {**foreign()["metadata"],
                                                                "deletionTimestamp": "2026-11-29T00:00:00Z"}}])
def test_BRG_5_a_deleted_foreign_object_leaves_its_mirror_to_the_garbage_collector(f):
    assert m.plan(m.Group(COSCHEDULING, f, mirror_of(foreign())), {"phase": "Pending"}) == []


def test_BRG_5_a_changed_priority_class_is_said_not_applied():
    f = foreign(VOLCANO, minMember=2, priorityClassName="low")
    mine = mirror_of(foreign(VOLCANO, minMember=2, priorityClassName="high"), VOLCANO)
    actions = m.plan(m.Group(VOLCANO, f, mine), None)
    assert verbs(actions) == [("event", "MirrorImmutable")] and "immutable" in actions[0].body


# ------------------------------------------------------------------ status back (BRG-6)

@pytest.mark.parametrize("pods,phase", [
    ([], "Pending"),
    ([member("a"), member("b"), member("c")], "Pending"),                        # 3 of minMember 4
    ([member(n) for n in "abcd"], "Scheduling"),
    ([member(n, "Running", "n1") for n in "abc"] + [member("d")], "Scheduling"),
    ([member(n, "Running", "n1") for n in "abcd"], "Running"),
    ([member(n, "Succeeded", "n1") for n in "ab"] + [member(n, "Running", "n1") for n in "cd"], "Running"),
    ([member(n, "Succeeded", "n1") for n in "abcd"], "Finished"),
    ([member("a", "Failed", "n1")] + [member(n, "Running", "n1") for n in "bcd"], "Failed"),
    ([member(n, "Running", "n1") for n in "abc"] + [member("d", deleting=True)], "Pending"),
])
def test_BRG_6_coscheduling_phase_as_scheduler_plugins_controller_computes_it(pods, phase):
    f = foreign(minMember=4)
    out = st.desired(COSCHEDULING, f, mirror_of(f), pods)
    assert out["phase"] == phase
    assert out["running"] == sum(p["status"]["phase"] == "Running" and "deletionTimestamp" not in p["metadata"]
                                 for p in pods)


@pytest.mark.parametrize("final", ["Finished", "Failed"])
def test_BRG_6_a_final_coscheduling_phase_is_left_alone(final):
    f = foreign(minMember=4, status={"phase": final})
    assert st.desired(COSCHEDULING, f, mirror_of(f), []) is None


def test_BRG_6_no_status_before_the_mirror_exists():
    assert st.desired(VOLCANO, foreign(VOLCANO, minMember=2), None, []) is None


INITIALLY = "PodGroupInitiallyScheduled"


@pytest.mark.parametrize("pods,condition,phase", [
    ([], None, "Inqueue"),                                           # never Pending: the training operator waits
    ([member("a"), member("b")], {"type": INITIALLY, "status": "False", "reason": "Unschedulable"}, "Inqueue"),
    ([member("a", "Running", "n1"), member("b", "Pending", "n1")], {"type": INITIALLY, "status": "True"}, "Running"),
    ([member("a", "Succeeded", "n1"), member("b", "Failed", "n1")], {"type": INITIALLY, "status": "True"},
     "Completed"),
    ([member("a", "Running", "n1"), member("b")], {"type": INITIALLY, "status": "False", "reason": "Unschedulable"},
     "Unknown"),
])
def test_BRG_6_volcano_phase_as_volcanos_scheduler_computes_it(pods, condition, phase):
    f = foreign(VOLCANO, minMember=2, status={"phase": "Pending"})
    out = st.desired(VOLCANO, f, mirror_of(f, VOLCANO, [condition] if condition else []), pods)
    assert out["phase"] == phase


def test_BRG_6_volcano_conditions_follow_the_in_tree_condition_and_keep_others():
    other = {"type": "Custom", "status": "True"}
    f = foreign(VOLCANO, minMember=2, status={"phase": "Pending", "conditions": [other]})
    waiting = {"type": INITIALLY, "status": "False", "reason": "Unschedulable",
               "message": "minCount (2) cannot be satisfied: 1 scheduled", "lastTransitionTime": "2026-11-29T00:00:00Z"}
    out = st.desired(VOLCANO, f, mirror_of(f, VOLCANO, [waiting]), [])
    assert out["conditions"] == [other, {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                                         "message": "minCount (2) cannot be satisfied: 1 scheduled",
                                         "transitionID": "workload-webhook-bridge",
                                         "lastTransitionTime": "2026-11-29T00:00:00Z"}]
    done = st.desired(VOLCANO, f, mirror_of(f, VOLCANO, [{**waiting, "status": "True"}]), [])
    assert [c["type"] for c in done["conditions"]] == ["Custom", "Scheduled"]


def test_BRG_6_status_is_written_only_when_it_changes():
    f = foreign(minMember=1, status={"phase": "Running", "running": 1})        # Go omitted succeeded/failed: 0
    running = [member("a", "Running", "n1")]
    assert m.plan(m.Group(COSCHEDULING, f, mirror_of(f), tuple(running)),
                  st.desired(COSCHEDULING, f, mirror_of(f), running)) == []
    actions = m.plan(m.Group(COSCHEDULING, f, mirror_of(f)), st.desired(COSCHEDULING, f, mirror_of(f), []))
    assert [(a.verb, a.body["phase"]) for a in actions] == [("status", "Pending")]


# ------------------------------------------------------------------ create warnings (BRG-1)

def review(obj, op="CREATE", bridge=None):
    bridge = {"coscheduling": True, "volcano": True} if bridge is None else bridge
    return engine.validate(engine.Request(op, obj["apiVersion"].split("/")[0], obj["apiVersion"].split("/")[1],
                                          "PodGroup", obj, copy.deepcopy(obj) if op == "UPDATE" else None, "ml"),
                           config(bridge=bridge))


def test_BRG_1_what_has_no_in_tree_equivalent_is_a_warning_on_create():
    v = review(foreign(minMember=2, scheduleTimeoutSeconds=10, minResources={"cpu": "4"}))
    assert v.allowed and v.checked
    assert v.warnings == ["spec.scheduleTimeoutSeconds: not mirrored: no timeout: the gang waits until minCount Pods "
                          "fit (BRG-1)",
                          "spec.minResources: not mirrored: not checked: each Pod's own requests are (BRG-1)"]
    assert all(len(w) <= 120 for w in v.warnings)


def test_BRG_1_volcanos_default_queue_needs_no_word_another_does():
    assert review(foreign(VOLCANO, minMember=2, queue="default")).warnings == []
    assert review(foreign(VOLCANO, minMember=2, queue="gpu")).warnings == [
        "spec.queue: not mirrored: no queues: kube-scheduler orders groups by priority (BRG-1)"]


def test_BRG_1_a_min_member_below_one_is_said():
    assert review(foreign(VOLCANO, minMember=0)).warnings == [
        "spec.minMember: 0: the in-tree gang gets minCount 1 (BRG-5)"]


def test_BRG_1_only_creates_and_only_the_dialects_that_are_on():
    obj = foreign(minMember=2, scheduleTimeoutSeconds=10)
    assert review(obj, op="UPDATE").warnings == []
    off = review(obj, bridge={"volcano": True})
    assert not off.checked and off.warnings == []
