"""`explain` of a job written for Coscheduling or Volcano: the foreign PodGroup at the
top, its mirror below it, the members; asked by the foreign resource or by the mirror."""
from __future__ import annotations

import pytest

from webhook.foreign.mirror import mirror_for
from webhook.foreign.dialects import BRIDGE_LABEL, COSCHEDULING, VOLCANO
from webhook.explain import foreign, text, tree
from webhook.explain.reader import FOREIGN

NS = "ml"


def foreign_pg(d=COSCHEDULING, name="train", uid="u-foreign", **spec):
    return {"apiVersion": d.api_version, "kind": "PodGroup", "metadata": {"name": name, "namespace": NS, "uid": uid},
            "spec": {"minMember": 4, **spec}, "status": {"phase": "Running", "running": 4}}


def member(name, d=COSCHEDULING, joined=True, node="n1", scheduler="default-scheduler"):
    meta = {"name": name, "namespace": NS, "uid": f"u-{name}"}
    meta[d.pod_key_in] = {d.pod_key: "train"}
    spec = {"containers": [{"name": "c", "image": "x"}], "schedulerName": scheduler}
    if joined:
        spec["schedulingGroup"] = {"podGroupName": "train"}
        spec["nodeName"] = node
        meta.setdefault("labels", {}).update({"scheduling.k8s.io/pod-group": "train", BRIDGE_LABEL: d.name})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def objects(d=COSCHEDULING, with_mirror=True, pods=None, **spec):
    f = foreign_pg(d, **spec)
    mirror = mirror_for(d, f)
    mirror["metadata"]["uid"] = "u-mirror"
    mirror["spec"]["disruptionMode"] = {"single": {}}
    return {"owners": [foreign.qualify(dict(f))], "workloads": [], "podgroups": [mirror] if with_mirror else [],
            "composites": [], "pods": pods if pods is not None else [member(f"w{i}", d) for i in range(4)],
            "claims": [], "events": []}


@pytest.mark.parametrize("asked", [("podgroups.scheduling.x-k8s.io", "train"), ("PodGroup.scheduling.x-k8s.io", "train"),
                                   ("podgroup", "train")])
def test_the_foreign_group_is_the_root_its_mirror_below_it_the_members_in_it(asked):
    result = tree.build(objects(), *asked, NS)
    root = result["root"]
    assert root["kind"] == "PodGroup.scheduling.x-k8s.io" and root["name"] == "train"
    assert root["bridge"]["mirror"] == "current" and root["bridge"]["joined"] == 4
    assert [c["kind"] for c in root["children"]] == ["PodGroup"]
    mirror = root["children"][0]
    assert mirror["minCount"] == 4 and mirror["members"]["joined"] == 4 and mirror["members"]["bound"] == 4
    asked_nodes = [n for n in (root, mirror) if n.get("asked")]
    assert asked_nodes == [mirror if asked[0] == "podgroup" else root]
    assert result["summary"]["bound"] == 4


def test_the_text_says_what_the_bridge_made_of_it():
    out = text.render(tree.build(objects(scheduleTimeoutSeconds=30), "podgroups.scheduling.x-k8s.io", "train", NS))
    first = out.splitlines()[0]
    assert first == "PodGroup.scheduling.x-k8s.io train · Coscheduling · minMember 4 · (asked)"
    assert "phase: Running (4 running, 0 succeeded, 0 failed)" in out
    assert "mirror: the in-tree PodGroup train (gang minCount 4), made by the bridge and owned by this object" in out
    assert "members named by metadata.labels[scheduling.x-k8s.io/pod-group]: 4, joined 4" in out
    assert "not mirrored: spec.scheduleTimeoutSeconds: no timeout" in out
    assert "└─ PodGroup train · gang minCount 4" in out


def test_without_a_mirror_the_foreign_group_says_why_and_names_its_unjoined_pods():
    pods = [member("w0", VOLCANO, joined=False, scheduler="volcano"), member("w1", VOLCANO, joined=False)]
    result = tree.build(objects(VOLCANO, with_mirror=False, pods=pods), "podgroups.scheduling.volcano.sh", "train", NS)
    b = result["root"]["bridge"]
    assert (b["mirror"], b["named"], b["joined"], b["notJoined"], b["otherScheduler"]) == (
        "none", 2, 0, ["w0", "w1"], ["w0"])
    out = text.render(result)
    assert "mirror: none: bridge.volcano is off in the serving config" in out
    assert "not joined (created before the bridge was on, or with the webhook down): w0, w1" in out


def test_an_in_tree_group_the_bridge_did_not_make_is_said():
    objs = objects()
    objs["podgroups"][0]["metadata"].pop("labels")
    objs["podgroups"][0]["metadata"].pop("ownerReferences")
    result = tree.build(objs, "podgroups.scheduling.x-k8s.io", "train", NS)
    assert result["root"]["bridge"]["mirror"] == "other" and result["root"]["children"] == []


def test_the_reader_can_be_asked_for_both_dialects_by_resource_and_by_kind():
    assert {k: (v.group, v.versions, v.plural) for k, v in FOREIGN.items()} == {
        "PodGroup.scheduling.x-k8s.io": ("scheduling.x-k8s.io", ("v1alpha1",), "podgroups"),
        "podgroups.scheduling.x-k8s.io": ("scheduling.x-k8s.io", ("v1alpha1",), "podgroups"),
        "PodGroup.scheduling.volcano.sh": ("scheduling.volcano.sh", ("v1beta1",), "podgroups"),
        "podgroups.scheduling.volcano.sh": ("scheduling.volcano.sh", ("v1beta1",), "podgroups")}
    assert foreign.qualify({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup"})["kind"] == "PodGroup"
