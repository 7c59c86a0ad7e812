"""The gang state machine (webhook/gangs/state.py): every state and every transition, from data."""
from __future__ import annotations

import pytest

from webhook.gangs import state as sm
from webhook.gangs.state import GangGroup, GangMember

RUN = GangMember("Running", "node-a")
BOUND = GangMember("Pending", "node-a")
WAIT = GangMember("Pending", "", "Unschedulable")
DONE = GangMember("Succeeded", "node-a")
FAIL = GangMember("Failed", "node-a")


def st(group, *members, was=False):
    return sm.state(group, members, was_scheduled=was)


def test_waiting_for_members_counts_and_line():
    s = st(GangGroup(4), RUN, WAIT, WAIT)
    assert s.state == sm.WAITING_FOR_MEMBERS
    assert s.line() == "waiting for members 3/4"
    assert st(GangGroup(4)).line() == "waiting for members 0/4"


def test_members_being_deleted_do_not_count():
    assert st(GangGroup(2), WAIT, GangMember("Pending", deleting=True)).line() == "waiting for members 1/2"


def test_waiting_for_capacity_takes_the_podgroup_condition_reason_first():
    s = st(GangGroup(2, condition="False", reason="Unschedulable"), WAIT, GangMember("Pending", "", "Other"))
    assert (s.state, s.reason) == (sm.WAITING_FOR_CAPACITY, "Unschedulable")
    assert s.line().startswith("waiting for capacity: Unschedulable (0/2 bound, 2 exist)")


def test_waiting_for_capacity_falls_back_to_the_members_most_common_reason():
    s = st(GangGroup(3), GangMember("Pending", "", "B"), GangMember("Pending", "", "A"), GangMember("Pending", "", "A"))
    assert (s.state, s.reason) == (sm.WAITING_FOR_CAPACITY, "A")
    assert st(GangGroup(1), GangMember("Pending")).reason == ""


def test_scheduled_by_the_condition_or_by_bound_members():
    assert st(GangGroup(2, condition="True"), BOUND, RUN).state == sm.SCHEDULED
    assert st(GangGroup(2), BOUND, RUN).state == sm.SCHEDULED          # the condition not written yet
    assert st(GangGroup(2), BOUND, WAIT).state == sm.WAITING_FOR_CAPACITY


def test_degraded_after_scheduled_when_fewer_than_mincount_on_a_node():
    s = st(GangGroup(3, condition="True"), RUN, RUN)                     # one evicted
    assert s.state == sm.DEGRADED and s.line().startswith("degraded: 2/3")
    assert st(GangGroup(3, condition="True"), RUN, RUN, WAIT).state == sm.DEGRADED   # replaced, not placed
    assert st(GangGroup(3, condition="True"), RUN, RUN, FAIL).state == sm.DEGRADED
    # the model remembers it was placed even when the condition is not there (yet)
    assert st(GangGroup(3), RUN, RUN, was=True).state == sm.DEGRADED
    assert st(GangGroup(3), RUN, RUN).state == sm.WAITING_FOR_MEMBERS


def test_degraded_recovers_to_scheduled():
    assert st(GangGroup(2, condition="True"), RUN, BOUND).state == sm.SCHEDULED


def test_succeeded_members_keep_a_gang_scheduled_then_finished():
    assert st(GangGroup(2, condition="True"), RUN, DONE).state == sm.SCHEDULED
    s = st(GangGroup(2, condition="True"), DONE, DONE)
    assert s.state == sm.FINISHED and s.line() == "finished (2/2 succeeded)"


def test_failed_when_nothing_is_active_and_too_few_succeeded():
    assert st(GangGroup(2, condition="True"), DONE, FAIL).state == sm.FAILED
    assert st(GangGroup(2), FAIL, FAIL).state == sm.FAILED


def test_failed_by_the_scheduler_error_condition():
    s = st(GangGroup(2, condition="False", reason="SchedulerError"), WAIT, WAIT)
    assert (s.state, s.reason) == (sm.FAILED, "SchedulerError")
    assert s.line().startswith("failed: SchedulerError")
    # Unschedulable is waiting, not failed
    assert st(GangGroup(2, condition="False", reason="Unschedulable"), WAIT, WAIT).state == sm.WAITING_FOR_CAPACITY


@pytest.mark.parametrize("before, after, want", [
    ((), (WAIT, WAIT, WAIT), sm.WAITING_FOR_MEMBERS),
    ((WAIT, WAIT, WAIT), (WAIT,) * 4, sm.WAITING_FOR_CAPACITY),
    ((WAIT,) * 4, (BOUND,) * 4, sm.SCHEDULED),
    ((RUN,) * 4, (RUN,) * 3, sm.DEGRADED),
    ((RUN,) * 3, (RUN,) * 4, sm.SCHEDULED),
    ((RUN,) * 4, (DONE,) * 4, sm.FINISHED),
    ((RUN,) * 4, (FAIL,) * 4, sm.FAILED),
])
def test_every_transition_of_a_gang_of_four(before, after, want):
    first = sm.state(GangGroup(4), before)
    second = sm.state(GangGroup(4), after, was_scheduled=sm.placed(first))
    assert second.state == want and second.key() != first.key()


def test_key_changes_with_counts_only_while_waiting_for_members():
    a, b = st(GangGroup(4), WAIT), st(GangGroup(4), WAIT, WAIT)
    assert a.key() != b.key()
    c, d = st(GangGroup(1, condition="True"), RUN), st(GangGroup(1, condition="True"), RUN, RUN)
    assert c.key() == d.key()
