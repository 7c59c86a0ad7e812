"""The bridge's Pod side: a Coscheduling label or a Volcano annotation names the group
(BRG-3), the join waits for the mirror or says it is missing (BRG-2), the schedulerName
hand-off (BRG-4), and the webhook registration that sends those Pods (matchConditions)."""
import pytest

from webhook import engine, registration
from webhook.mutation import foreign_join
from webhook.foreign.dialects import BRIDGE_LABEL
from webhook.view import StaticView
from webhook.mutation import lookup
from webhook.mutation.patch import apply
from tests.unit.helpers import config, pod, podgroup

COSCHED = "scheduling.x-k8s.io/pod-group"
VOLCANO = "scheduling.k8s.io/group-name"
LABEL = "scheduling.k8s.io/pod-group"
BOTH = {"coscheduling": True, "volcano": True}
MIRROR = podgroup("train")
VIEW = StaticView([MIRROR], authoritative=True)


def volcano_pod(value="train", **spec):
    p = pod(**spec)
    p["metadata"]["annotations"] = {VOLCANO: value}
    return p


def run(p, bridge=BOTH, view=VIEW, **cfg):
    req = engine.Request("CREATE", "", "v1", "Pod", p, None, "ml")
    return engine.mutate(req, config(bridge=bridge, **cfg), view)


def joined(p, **kw):
    v = run(p, **kw)
    assert v.allowed, v.errors
    return v, apply(p, v.patch or [])


def test_BRG_3_the_coscheduling_label_joins_the_mirrored_group_as_a_labelled_pod_does():
    v, out = joined(pod({COSCHED: "train"}))
    assert out["spec"]["schedulingGroup"] == {"podGroupName": "train"}
    assert out["metadata"]["labels"] == {COSCHED: "train", LABEL: "train", BRIDGE_LABEL: "coscheduling"}
    assert v.warnings == []


def test_BRG_3_the_volcano_annotation_joins_the_mirrored_group():
    _, out = joined(volcano_pod())
    assert out["spec"]["schedulingGroup"] == {"podGroupName": "train"}
    assert out["metadata"]["labels"] == {LABEL: "train", BRIDGE_LABEL: "volcano"}


def test_BRG_3_the_group_gets_the_mirrors_claims_as_any_member_does():
    gpu = {"name": "gpu", "resourceClaimTemplateName": "gpus"}
    _, out = joined(pod({COSCHED: "train"}), view=StaticView([podgroup("train", resourceClaims=[gpu])], True))
    assert out["spec"]["resourceClaims"] == [gpu]


@pytest.mark.parametrize("bridge", [{}, {"volcano": True}])
def test_BRG_3_a_dialect_that_is_off_names_no_group(bridge):
    v = run(pod({COSCHED: "train"}), bridge=bridge)
    assert v.allowed and not v.patch


def test_BRG_3_an_empty_value_names_no_group_as_for_both_schedulers():
    v = run(pod({COSCHED: ""}))
    assert v.allowed and not v.patch


def test_BRG_3_a_value_that_cannot_name_a_podgroup_is_denied():
    v = run(pod({COSCHED: "Not_A_Name"}))
    assert not v.allowed
    assert [(str(e.field), e.rule) for e in v.errors] == [(f"metadata.labels[{COSCHED}]", "BRG-3")]


def test_BRG_3_two_foreign_keys_naming_two_groups_are_denied():
    p = dict(volcano_pod("other"), metadata={**volcano_pod("other")["metadata"], "labels": {COSCHED: "train"}})
    v = run(p)
    assert not v.allowed and [e.rule for e in v.errors] == ["BRG-3"]
    assert f"but metadata.labels[{COSCHED}] names 'train'" in v.errors[0].detail and "two groups" in v.errors[0].detail


@pytest.mark.parametrize("p,group", [
    (pod({COSCHED: "train", LABEL: "other"}), "other"),
    (pod({COSCHED: "Not_A_Name", LABEL: "other"}), "other"),
    # a batch/v1 Job with WorkloadWithJob: the Job controller puts its Pods in its own PodGroup
    (pod({COSCHED: "train"}, schedulingGroup={"podGroupName": "job-pg"}), "job-pg"),
])
def test_BRG_3_the_in_tree_name_wins_and_the_foreign_key_is_ignored_with_a_warning(p, group):
    v, out = joined(p, view=StaticView([podgroup(group)], True))
    assert out["spec"]["schedulingGroup"] == {"podGroupName": group}
    assert BRIDGE_LABEL not in out["metadata"]["labels"]
    assert v.warnings == [f"metadata.labels[{COSCHED}]: {p['metadata']['labels'][COSCHED]!r} ignored: the Pod "
                          f"joins PodGroup {group!r} (BRG-3)"]


def test_BRG_3_a_foreign_key_agreeing_with_the_label_is_joined_and_marked():
    _, out = joined(pod({COSCHED: "train", LABEL: "train"}))
    assert out["metadata"]["labels"][BRIDGE_LABEL] == "coscheduling"


def test_BRG_3_the_validating_side_agrees():
    bad = volcano_pod("a")
    bad["metadata"]["labels"] = {COSCHED: "b"}
    verdict = engine.validate(engine.Request("CREATE", "", "v1", "Pod", bad, None, "ml"), config(bridge=BOTH))
    assert [e.rule for e in verdict.errors] == ["BRG-3"]
    fine = engine.validate(engine.Request("CREATE", "", "v1", "Pod", pod({COSCHED: "a", LABEL: "b"}), None, "ml"),
                           config(bridge=BOTH))
    assert fine.allowed


def test_BRG_2_a_pod_before_its_mirror_joins_by_name_and_is_told_it_waits():
    v, out = joined(pod({COSCHED: "train"}), view=StaticView([], authoritative=True))
    assert out["spec"]["schedulingGroup"] == {"podGroupName": "train"}
    assert v.warnings == ["spec.schedulingGroup.podGroupName: no mirror of Coscheduling PodGroup 'train' yet; "
                          "the Pod waits for it (BRG-2)"]


def test_BRG_2_with_on_missing_deny_a_missing_mirror_is_refused_saying_why():
    v = run(pod({COSCHED: "train"}), view=StaticView([]), pods={"onMissingPodGroup": "deny"})
    assert not v.allowed
    assert [e.rule for e in v.errors] == ["BRG-2"]          # instead of POD-5, not beside it
    assert "the bridge has not mirrored Coscheduling PodGroup 'train' in namespace 'ml'" in v.errors[0].detail


def test_BRG_2_relaxed_to_warn_the_pod_still_joins():
    v = run(pod({COSCHED: "train"}), view=StaticView([]), pods={"onMissingPodGroup": "deny"},
            enforcement={"rules": {"BRG-2": "warn"}})
    assert v.allowed and [e.rule for e in v.warned] == ["BRG-2"]
    assert apply(pod({COSCHED: "train"}), v.patch)["spec"]["schedulingGroup"] == {"podGroupName": "train"}


def test_BRG_2_a_mirror_being_deleted_is_refused_as_POD_5_says():
    dying = podgroup("train")
    dying["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    v = run(pod({COSCHED: "train"}), view=StaticView([dying], True))
    assert [e.rule for e in v.errors] == ["POD-5"] and "being deleted" in v.errors[0].detail


class Appearing:
    """A live cluster's view in which the mirror exists from the third lookup on."""
    authoritative, disabled, synced = True, False, {}

    def __init__(self):
        self.lookups = 0

    def podgroup(self, namespace, name):
        self.lookups += 1
        return MIRROR if self.lookups >= 3 else None

    def workload(self, namespace, name):
        return None

    def namespace_labels(self, name):
        return None


def test_BRG_2_with_on_missing_deny_the_join_waits_for_the_mirror(monkeypatch):
    monkeypatch.setattr(foreign_join.time, "sleep", lambda s: None)
    view = Appearing()
    v = run(pod({COSCHED: "train"}), view=view, pods={"onMissingPodGroup": "deny"})
    assert v.allowed, v.errors
    assert view.lookups >= 3


def test_BRG_2_the_wait_is_bounded_by_the_lookup_timeout():
    now = [0.0]
    slept = []

    class Never(Appearing):
        def podgroup(self, namespace, name):
            return None
    found = foreign_join.await_mirror(Never(), "ml", "train", 2.0, sleep=lambda s: (slept.append(s), now.__setitem__(
        0, now[0] + s)), clock=lambda: now[0])
    assert found.outcome is lookup.Outcome.MISSING and 0 < sum(slept) <= 2.0


def test_BRG_2_the_wait_never_asks_an_offline_view():
    assert foreign_join.await_mirror(StaticView([]), "ml", "train", 2.0, sleep=pytest.fail) is None


def test_BRG_4_a_pod_naming_an_old_scheduler_is_handed_to_the_default_one():
    bridge = {**BOTH, "schedulerNames": ["volcano"]}
    v, out = joined(volcano_pod(schedulerName="volcano"), bridge=bridge)
    assert out["spec"]["schedulerName"] == "default-scheduler"
    assert {"op": "replace", "path": "/spec/schedulerName", "value": "default-scheduler"} in v.patch
    again = run(out, bridge=bridge)
    assert again.allowed and not again.patch                      # idempotent (POD-6)


def test_BRG_4_the_hand_off_needs_no_group():
    old = "scheduler-plugins-scheduler"
    v, out = joined(pod(schedulerName=old), bridge={"schedulerNames": [old]})
    assert out["spec"]["schedulerName"] == "default-scheduler" and "schedulingGroup" not in out["spec"]


@pytest.mark.parametrize("name", ["default-scheduler", "my-scheduler"])
def test_BRG_4_other_schedulers_are_left_alone(name):
    v = run(volcano_pod(schedulerName=name), bridge={**BOTH, "schedulerNames": ["volcano"]})
    assert all(op["path"] != "/spec/schedulerName" for op in v.patch or [])


def test_BRG_6_mutating_twice_adds_nothing_the_second_time():
    _, out = joined(volcano_pod())
    assert not run(out).patch


def _pod_condition(cfg):
    docs = registration.configurations(cfg, registration.Endpoint(b"ca", url="https://127.0.0.1:1"))
    hooks = {h["name"]: h for d in docs[:2] for h in d["webhooks"]}
    return hooks, hooks["pods.mutate.workload-webhook.k8s.io"]["matchConditions"][0]["expression"]


def test_registration_without_the_bridge_is_unchanged():
    hooks, expression = _pod_condition(config())
    assert expression == ("(has(object.metadata.labels) && 'scheduling.k8s.io/pod-group' in object.metadata.labels)"
                          " || has(object.spec.schedulingGroup)")
    assert "bridge.validate.workload-webhook.k8s.io" not in hooks


def test_registration_sends_the_foreign_pods_and_the_foreign_podgroup_creates():
    hooks, expression = _pod_condition(config(bridge={**BOTH, "schedulerNames": ["volcano"]}))
    assert f"(has(object.metadata.labels) && '{COSCHED}' in object.metadata.labels)" in expression
    assert f"(has(object.metadata.annotations) && '{VOLCANO}' in object.metadata.annotations)" in expression
    assert "(has(object.spec.schedulerName) && object.spec.schedulerName in ['volcano'])" in expression
    foreign = hooks["bridge.validate.workload-webhook.k8s.io"]
    assert foreign["failurePolicy"] == "Ignore"
    assert [(r["apiGroups"], r["apiVersions"], r["resources"], r["operations"]) for r in foreign["rules"]] == [
        (["scheduling.x-k8s.io"], ["v1alpha1"], ["podgroups"], ["CREATE"]),
        (["scheduling.volcano.sh"], ["v1beta1"], ["podgroups"], ["CREATE"])]
