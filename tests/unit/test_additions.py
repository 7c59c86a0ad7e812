"""The JSON Patch adds built from what a mutation adds (webhook.mutation.additions)
and the Pod's Join value they are built from (webhook.mutation.pods)."""
import copy

import jsonpatch
import pytest

from webhook.view import StaticView
from webhook.mutation.additions import Additions
from webhook.mutation.pods import Join, patch, plan_join
from tests.unit.helpers import config, pod, podgroup

LABEL = "scheduling.k8s.io/pod-group"


def applied(obj, ops):
    return jsonpatch.apply_patch(copy.deepcopy(obj), ops)


@pytest.mark.parametrize("obj", [{}, {"metadata": None}, {"metadata": {}}, {"metadata": {"labels": None}},
                                 {"metadata": {"labels": {"a": "1"}}}])
def test_members_land_whatever_parents_exist(obj):
    adds = Additions(obj)
    adds.member(("metadata", "labels"), "x", "1")
    adds.member(("metadata", "labels"), "y/z", "2")
    out = applied(obj, adds.ops)
    assert out["metadata"]["labels"] == {**((obj.get("metadata") or {}).get("labels") or {}), "x": "1", "y/z": "2"}


def test_a_missing_parent_is_created_once_with_everything_below_it():
    obj = {"spec": {"containers": [{"name": "c"}]}}
    adds = Additions(obj)
    adds.member(("spec",), "schedulingGroup", {"podGroupName": "pg"})
    adds.item(("spec", "resourceClaims"), {"name": "a"})
    adds.item(("spec", "resourceClaims"), {"name": "b"})
    adds.item(("spec", "containers", 0, "resources", "claims"), {"name": "a"})
    adds.item(("spec", "containers", 0, "resources", "claims"), {"name": "b"})
    assert [op["path"] for op in adds.ops] == ["/spec/schedulingGroup", "/spec/resourceClaims",
                                                "/spec/containers/0/resources"]
    out = applied(obj, adds.ops)
    assert out["spec"]["resourceClaims"] == [{"name": "a"}, {"name": "b"}]
    assert out["spec"]["containers"][0]["resources"] == {"claims": [{"name": "a"}, {"name": "b"}]}


def test_a_missing_spec_gets_one_add_for_everything():
    adds = Additions({"metadata": {}})
    adds.member(("spec",), "schedulingGroup", {"podGroupName": "pg"})
    adds.item(("spec", "resourceClaims"), {"name": "a"})
    assert adds.ops == [{"op": "add", "path": "/spec", "value": {"schedulingGroup": {"podGroupName": "pg"},
                                                                  "resourceClaims": [{"name": "a"}]}}]


def test_existing_lists_are_appended_to_never_replaced():
    obj = {"spec": {"resourceClaims": [{"name": "own"}]}}
    adds = Additions(obj)
    adds.item(("spec", "resourceClaims"), {"name": "gpu"})
    assert adds.ops == [{"op": "add", "path": "/spec/resourceClaims/-", "value": {"name": "gpu"}}]
    assert obj == {"spec": {"resourceClaims": [{"name": "own"}]}}      # the object itself is never changed


GPU = {"name": "gpu", "resourceClaimTemplateName": "gpus"}
VIEW = StaticView([podgroup("pg", resourceClaims=[GPU], workloadRef={"workloadName": "train"})], authoritative=True)


def test_POD_6_a_join_is_a_value_and_a_joined_pod_plans_nothing():
    cfg = config(pods={"claimsToContainers": "all", "workloadLabel": "example.com/workload"})
    p = pod({LABEL: "pg"})
    join = plan_join(p, "pg", "ml", cfg, VIEW)
    assert join == Join(group="pg", scheduling_group=True, labels=(("example.com/workload", "train"),),
                        claims=(GPU,), container_claims=((0, ("gpu",)),))
    joined = applied(p, patch(p, join))
    again = plan_join(joined, "pg", "ml", cfg, VIEW)
    assert again == Join(group="pg") and patch(joined, again) == []


def test_POD_5_a_failed_lookup_is_in_the_join_not_in_an_out_parameter():
    cfg = config(pods={"onMissingPodGroup": "deny"})
    join = plan_join(pod({LABEL: "other"}), "other", "ml", cfg, VIEW)
    assert [e.rule for e in join.errors] == ["POD-5"] and join.claims == ()
    assert join.scheduling_group      # relaxed by enforcement, the Pod still joins its group
