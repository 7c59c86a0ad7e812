"""Hostile input with the bridge on: corrupted Coscheduling and Volcano PodGroups and
bridged Pods never raise, every patch applies, the Pod join is idempotent, and the
only patch that is not an `add` is the schedulerName hand-off (BRG-4)."""
import dataclasses
import os

import jsonpatch
from hypothesis import HealthCheck, given, settings, strategies as st

from webhook import engine
from webhook.foreign.mirror import mirror_for, plan, Group
from webhook.foreign import status
from webhook.foreign.dialects import COSCHEDULING, VOLCANO
from webhook.view import StaticView
from webhook.field import FieldError
from tests.unit.helpers import config, node_paths, replaced, pod, podgroup
from tests.unit.test_hostile import json_values

CFG = config(bridge={"coscheduling": True, "volcano": True, "schedulerNames": ["volcano"]})
VIEW = StaticView([podgroup("train")], authoritative=True)
SEEDS = [
    {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "train", "namespace": "ml",
                                                                                   "uid": "u"},
     "spec": {"minMember": 4, "scheduleTimeoutSeconds": 10, "minResources": {"cpu": "4"}}, "status": {"phase": "Pending"}},
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "train", "namespace": "ml",
                                                                                    "uid": "u"},
     "spec": {"minMember": 2, "queue": "gpu", "priorityClassName": "high", "minTaskMember": {"w": 1}},
     "status": {"phase": "Pending", "conditions": [{"type": "Scheduled", "status": "True"}]}},
    {**pod({"scheduling.x-k8s.io/pod-group": "train"}, schedulerName="volcano"),
     "metadata": {"name": "p", "namespace": "ml", "labels": {"scheduling.x-k8s.io/pod-group": "train"},
                  "annotations": {"scheduling.k8s.io/group-name": "train"}}},
]


@st.composite
def corrupted(draw):
    seed = draw(st.sampled_from(SEEDS))
    paths = [p for p in node_paths(seed) if p[:1] not in (("apiVersion",), ("kind",))]
    return seed, replaced(seed, draw(st.sampled_from(paths)), draw(json_values))


@settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 300)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(corrupted())
def test_corrupted_foreign_objects_and_bridged_pods_never_raise(case):
    seed, obj = case
    group, _, version = seed["apiVersion"].rpartition("/")
    req = engine.Request("CREATE", group, version, seed["kind"], obj, None, "ml")
    for verdict in (engine.validate(req, CFG, VIEW), engine.mutate(req, CFG, VIEW)):
        assert all(isinstance(e, FieldError) for e in verdict.errors)
        [str(e) for e in verdict.errors]
        assert all(isinstance(w, str) and len(w) <= 1024 for w in verdict.warnings)
    mutated = engine.mutate(req, CFG, VIEW)
    if mutated.patch:
        for op in mutated.patch:
            assert op["op"] == "add" or op == {"op": "replace", "path": "/spec/schedulerName",
                                               "value": "default-scheduler"}, op
        out = jsonpatch.JsonPatch(mutated.patch).apply(obj)
        assert engine.mutate(dataclasses.replace(req, object=out), CFG, VIEW).patch is None
    if seed["kind"] == "PodGroup" and isinstance(obj, dict):
        d = COSCHEDULING if group == COSCHEDULING.group else VOLCANO
        mirror = mirror_for(d, obj)
        for pods in ((), (obj,)):
            desired = status.desired(d, obj, mirror, pods)
            plan(Group(d, obj, None), desired)
            plan(Group(d, obj, mirror), desired)
