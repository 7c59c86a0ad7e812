"""GANG-1..3 (webhook/rules/gang_members.py): a joining Pod kube-scheduler would fail its
whole group for is refused with the scheduler's words, through the Pod join (engine.mutate)
over a StaticView; and the live members lookup (webhook/cluster/members.py) asks the API
server only when nothing agreeing is remembered, never in a judgment that may not wait.
tests/e2e/test_gang_rules.py proves each rule against the real kube-scheduler."""
import json

import pytest

from tests.unit.helpers import composite_podgroup, config, pod, podgroup
from webhook import engine
from webhook.cluster.api import Api
from webhook.cluster.members import MEMO_TTL, Members
from webhook.view import ClusterUnavailable, Judgment, Member, NeedsNetwork, StaticView

LABEL = "scheduling.k8s.io/pod-group"
SCHEDULER_ERROR = "PodGroupInitiallyScheduled=False reason SchedulerError"


def joined(p, *objects, cfg=None):
    return engine.mutate(engine.Request.for_object(p), cfg or config(), StaticView(list(objects), authoritative=True))


def member(name="m0", scheduler="default-scheduler", policy=None, phase="Running", group="pg"):
    spec = {"schedulerName": scheduler, **({"preemptionPolicy": policy} if policy else {})}
    out = pod({LABEL: group}, **spec)
    out["metadata"]["name"] = name
    out["status"] = {"phase": phase}
    return out


def rules(v):
    return [e.rule for e in v.errors]


def test_GANG_1_a_priority_other_than_the_groups_is_refused_in_the_schedulers_words():
    v = joined(pod({LABEL: "pg"}, priorityClassName="high", priority=1000), podgroup("pg", priority=0))
    assert rules(v) == ["GANG-1"] and not v.allowed
    e = v.errors[0]
    assert str(e.field) == "spec.priority" and e.value == 1000
    assert "all pods in a single pod group should have the same priority as the pod group's priority, " \
           "got 1000 and 0" in e.detail and SCHEDULER_ERROR in e.detail and "no priorityClassName" in e.detail


def test_GANG_1_the_groups_priority_and_unset_priorities_join():
    assert joined(pod({LABEL: "pg"}, priorityClassName="high", priority=1000),
                  podgroup("pg", priorityClassName="high", priority=1000)).allowed
    assert joined(pod({LABEL: "pg"}), podgroup("pg")).allowed            # both unset: both 0
    assert joined(pod({LABEL: "pg"}, priority=0), podgroup("pg")).allowed


def test_GANG_1_the_groups_class_is_named_in_what_to_change():
    v = joined(pod({LABEL: "pg"}), podgroup("pg", priorityClassName="high", priority=1000))
    assert rules(v) == ["GANG-1"] and "priorityClassName 'high'" in v.errors[0].detail \
        and "got 0 and 1000" in v.errors[0].detail


def test_GANG_1_a_class_the_api_server_never_resolved_is_not_judged():
    """Offline (mutate --context) a Pod may name a class with no value: unknown, not 0."""
    assert joined(pod({LABEL: "pg"}, priorityClassName="high"), podgroup("pg", priority=5)).allowed


def test_GANG_2_with_the_gate_the_policy_is_the_groups():
    v = joined(pod({LABEL: "pg"}, preemptionPolicy="Never"), podgroup("pg"))
    assert rules(v) == ["GANG-2"] and str(v.errors[0].field) == "spec.preemptionPolicy"
    assert "same preemption policy as the pod group's preemption policy, got Never and PreemptLowerPriority" \
        in v.errors[0].detail
    assert joined(pod({LABEL: "pg"}, preemptionPolicy="Never"), podgroup("pg", preemptionPolicy="Never")).allowed
    assert joined(pod({LABEL: "pg"}, preemptionPolicy="PreemptLowerPriority"), podgroup("pg")).allowed
    assert rules(joined(pod({LABEL: "pg"}), podgroup("pg", preemptionPolicy="Never"))) == ["GANG-2"]


def test_GANG_2_without_the_gate_the_policy_is_the_members():
    off = config(featureGates={"CompositePodGroup": True, "PodGroupPreemptionPolicy": False})
    v = joined(pod({LABEL: "pg"}, preemptionPolicy="Never"), podgroup("pg"), member(), cfg=off)
    assert rules(v) == ["GANG-2"]
    assert "same preemption policy, got Never and PreemptLowerPriority" in v.errors[0].detail
    assert joined(pod({LABEL: "pg"}, preemptionPolicy="Never"), podgroup("pg"), member(policy="Never"), cfg=off).allowed
    assert joined(pod({LABEL: "pg"}, preemptionPolicy="Never"), podgroup("pg"), cfg=off).allowed   # the first member


def test_GANG_3_a_scheduler_other_than_the_members_is_refused():
    v = joined(pod({LABEL: "pg"}, schedulerName="second-profile"), podgroup("pg"), member())
    assert rules(v) == ["GANG-3"] and str(v.errors[0].field) == "spec.schedulerName"
    assert "same .spec.schedulerName set, got: \"second-profile\" and \"default-scheduler\"" in v.errors[0].detail
    assert "set spec.schedulerName: default-scheduler" in v.errors[0].detail


def test_GANG_3_members_that_do_not_count_and_the_first_member():
    p = pod({LABEL: "pg"}, schedulerName="second-profile")
    assert joined(p, podgroup("pg")).allowed                                            # no member yet
    assert joined(p, podgroup("pg"), member(phase="Succeeded")).allowed                 # terminated: not seen
    assert joined(p, podgroup("pg"), member(group="other")).allowed                     # another group's
    assert joined(p, podgroup("pg"), member(scheduler="second-profile")).allowed


def test_GANG_3_the_bridges_hand_over_is_the_name_compared():
    cfg = config(bridge={"schedulerNames": ["volcano"]})
    v = joined(pod({LABEL: "pg"}, schedulerName="volcano"), podgroup("pg"), member(), cfg=cfg)
    assert "GANG-3" not in rules(v)


def test_in_a_hierarchy_the_root_composite_groups_priority_and_policy_count():
    leaf = podgroup("pg", parentCompositePodGroupName="mid", workloadRef={"workloadName": "wl", "templateName": "t"})
    mid = composite_podgroup(parentCompositePodGroupName="top", priority=7)
    mid["metadata"]["name"] = "mid"
    top = composite_podgroup(priority=100, preemptionPolicy="Never")
    top["metadata"]["name"] = "top"
    v = joined(pod({LABEL: "pg"}, priority=0), leaf, mid, top)
    assert sorted(rules(v)) == ["GANG-1", "GANG-2"]
    assert "got 0 and 100" in v.errors[0].detail and "CompositePodGroup 'top'" in v.errors[0].detail
    assert joined(pod({LABEL: "pg"}, priority=100, preemptionPolicy="Never"), leaf, mid, top).allowed
    assert joined(pod({LABEL: "pg"}), leaf, mid).allowed           # a parent the view lacks: not judged
    no_composite = config(featureGates={"CompositePodGroup": False, "PodGroupPreemptionPolicy": True})
    assert joined(pod({LABEL: "pg"}), leaf, mid, top, cfg=no_composite).allowed   # the PodGroup is the root


def test_relaxed_by_enforcement_the_pod_joins_with_a_warning():
    cfg = config(enforcement={"rules": {"GANG-1": "warn"}})
    v = joined(pod({LABEL: "pg"}, priority=1000), podgroup("pg", resourceClaims=[
        {"name": "gpu", "resourceClaimTemplateName": "t"}]), cfg=cfg)
    assert v.allowed and [e.rule for e in v.warned] == ["GANG-1"]
    paths = {op["path"] for op in v.patch}
    assert "/spec/schedulingGroup" in paths and "/spec/resourceClaims" in paths      # joined, claims too


class _Reply:
    def __init__(self, status, body):
        self.status, self.reason, self._body = status, "OK" if status == 200 else "Forbidden", body

    def read(self):
        return self._body


class _Transport:
    def __init__(self, *pods, status=200):
        self.pods, self.status, self.asked = list(pods), status, []

    def send(self, method, path, query, headers, body, timeout):
        self.asked.append((method, path, dict(query)))
        return _Reply(self.status, json.dumps({"items": self.pods}).encode())


class _Clock:
    now = 1000.0

    def __call__(self):
        return self.now


def test_the_members_lookup_lists_once_and_then_answers_from_memory():
    transport, clock = _Transport(member()), _Clock()
    members = Members(Api(transport), timeout=1.0, clock=clock)
    default = Member("default-scheduler", None)
    assert members.member("ml", "pg", LABEL, "default-scheduler", None) == (default, "api")
    method, path, query = transport.asked[0]
    assert (method, path) == ("GET", "/api/v1/namespaces/ml/pods")
    assert query == {"labelSelector": f"{LABEL}=pg", "fieldSelector": "status.phase!=Succeeded,status.phase!=Failed",
                     "limit": 3}
    with Judgment(may_wait=False):                       # in the event loop: answered from memory
        assert members.member("ml", "pg", LABEL, "default-scheduler", None) == (default, "cache")
        assert members.member("ml", "pg", LABEL, "default-scheduler", "PreemptLowerPriority") == (default, "cache")
        with pytest.raises(NeedsNetwork):               # disagreeing: judged by a fresh LIST, not in the loop
            members.member("ml", "pg", LABEL, "second-profile", None)
        with pytest.raises(NeedsNetwork):
            members.member("ml", "pg", LABEL, "default-scheduler", "Never")
    assert len(transport.asked) == 1
    assert members.member("ml", "pg", LABEL, "second-profile", None) == (default, "api")   # the LIST still says default
    clock.now += MEMO_TTL
    members.member("ml", "pg", LABEL, "default-scheduler", None)
    assert len(transport.asked) == 3                    # remembered no longer than MEMO_TTL


def test_no_member_remembers_the_first_one_and_a_failure_pauses_the_lists():
    transport, clock = _Transport(), _Clock()
    members = Members(Api(transport), timeout=1.0, clock=clock)
    first = Member("second-profile", "Never")
    assert members.member("ml", "pg", LABEL, "second-profile", "Never") == (None, "missing")
    assert members.member("ml", "pg", LABEL, "second-profile", "Never") == (first, "cache") and len(transport.asked) == 1
    refusing = Members(Api(_Transport(status=403)), timeout=1.0, clock=clock)
    with pytest.raises(ClusterUnavailable, match="403"):
        refusing.member("ml", "pg", LABEL, "second-profile", "Never")
    with Judgment(may_wait=False), pytest.raises(ClusterUnavailable, match="failed"):
        refusing.member("ml", "pg", LABEL, "second-profile", "Never")       # not asked again: no NeedsNetwork either
