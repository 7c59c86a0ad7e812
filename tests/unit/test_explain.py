"""`explain`'s pure parts: the tree from listed objects (dicts, no server), the
managedFields reading and the two renderers. The live reader is proven in
tests/e2e/test_whole_job.py."""
from __future__ import annotations

import argparse
import json

import pytest

from webhook.commands.explain import add_parser, run
from webhook.explain import jsonout, provenance, text, tree

NS = "ml"
CLAIM = {"name": "gpu", "resourceClaimTemplateName": "gpu"}
LABEL = "scheduling.k8s.io/pod-group"


def meta(name, uid=None, owner=None, **extra):
    m = {"name": name, "namespace": NS, "uid": uid or f"uid-{name}", **extra}
    if owner is not None:
        m["ownerReferences"] = [{"apiVersion": owner.get("apiVersion"), "kind": owner["kind"],
                                 "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"], "controller": True}]
    return m


def job(name="train", claims=None):
    template = {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}
    if claims:
        template["spec"]["resourceClaims"] = claims
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name),
            "spec": {"parallelism": 4, "completions": 4, "template": template,
                     "scheduling": {"schedulingPolicy": {"gang": {"minCount": 4}}, "resourceClaims": [CLAIM]}},
            "status": {"active": 4}}


def workload(name="train-wl", owner=None, templates=None):
    spec = {"podGroupTemplates": templates or [{"name": "t0", "schedulingPolicy": {"gang": {"minCount": 4}},
                                                 "resourceClaims": [CLAIM]}]}
    if owner is not None:
        group = owner["apiVersion"].split("/")[0] if "/" in owner["apiVersion"] else ""
        spec["controllerRef"] = {"apiGroup": group, "kind": owner["kind"], "name": owner["metadata"]["name"]}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": meta(name, owner=owner),
            "spec": spec}


def podgroup(name="train", min_count=4, claims=(CLAIM,), owner=None, workload_ref=None, generated=None,
             condition=None, parent=None):
    spec = {"schedulingPolicy": {"gang": {"minCount": min_count}}, "disruptionMode": {"single": {}}}
    if claims:
        spec["resourceClaims"] = list(claims)
    if workload_ref:
        spec["workloadRef"] = workload_ref
    if parent:
        spec["parentCompositePodGroupName"] = parent
    status = {}
    if generated:
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": generated}]
    if condition:
        status["conditions"] = [{"type": "PodGroupInitiallyScheduled", **condition}]
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta(name, owner=owner),
            "spec": spec, "status": status}


def pod(name, group="train", node=None, claims=(CLAIM,), owner=None, label=None, joined=True):
    spec = {"containers": [{"name": "c", "image": "x"}]}
    if joined:
        spec["schedulingGroup"] = {"podGroupName": group}
    if claims:
        spec["resourceClaims"] = list(claims)
    if node:
        spec["nodeName"] = node
    m = meta(name, owner=owner)
    if label:
        m["labels"] = {LABEL: label}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": spec, "status": {"phase": "Pending"}}


def claim(name, owner, allocated=False, node="node-1", reserved=None):
    c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {**meta(name, owner=owner), "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                      "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                                         "fieldsV1": {"f:spec": {"f:devices": {}}}}]},
         "spec": {}, "status": {}}
    if allocated:
        c["status"] = {"allocation": {"devices": {"results": [{"driver": "gpu.example.com", "pool": node,
                                                               "device": "gpu-0", "request": "gpu"}]},
                                      "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                                          {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
                       "reservedFor": reserved or [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups",
                                                     "name": owner["metadata"]["name"], "uid": "x"}]}
    return c


def event(pod_name, reason, message, when="2026-12-01T10:00:00Z", type_="Warning"):
    return {"kind": "Event", "metadata": {"name": f"{pod_name}.{reason}", "namespace": NS},
            "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": NS},
            "reason": reason, "message": message, "type": type_, "lastTimestamp": when}


def objects(**lists):
    base = {"owners": [], "workloads": [], "podgroups": [], "composites": [], "pods": [], "claims": [], "events": []}
    base.update(lists)
    return base


def group_node(result):
    def walk(n):
        yield n
        for c in n.get("children") or []:
            yield from walk(c)
    return [n for n in walk(result["root"]) if n["kind"] == "PodGroup"]


# --------------------------------------------------------------------------- label-joined gang


def test_a_running_gang_shares_the_groups_claim():
    pg = podgroup(generated="train-gpu-abc", condition={"status": "True", "reason": "Scheduled"})
    pods = [pod(f"w-{i}", node="node-1", label="train") for i in range(4)]
    result = tree.build(objects(podgroups=[pg], pods=pods, claims=[claim("train-gpu-abc", pg, allocated=True)]),
                        "podgroup", "train", NS)
    [node] = group_node(result)
    assert node["asked"] and node is result["root"]
    assert node["members"]["joined"] == node["members"]["bound"] == 4 and node["members"]["pending"] == 0
    assert node["state"] == "running: 4 bound"
    [c] = node["claims"]
    assert c["claim"] == "train-gpu-abc" and c["allocated"] and c["devices"] == ["gpu.example.com/node-1/gpu-0"]
    assert c["nodes"] == ["node-1"] and c["reservedFor"] == ["podgroups/train"]
    assert c["sharedBy"] == ["w-0", "w-1", "w-2", "w-3"] and c["perPodInstead"] == c["noEntry"] == []
    assert c["note"] is None and c["generatedBy"] == "resourceclaim-controller (kube-controller-manager)"
    assert node["scheduling"]["reason"] == "Scheduled"
    assert result["summary"] == {"podGroups": 1, "joined": 4, "bound": 4, "pending": 0, "groupClaims": 1,
                                 "groupClaimsAllocated": 1, "podClaims": 0, "podClaimsAllocated": 0}


def test_a_waiting_gang_says_why():
    msg = "pod group is unschedulable, 0/1 placements are available: minCount (4) cannot be satisfied"
    pg = podgroup(claims=(), condition={"status": "False", "reason": "Unschedulable", "message": msg})
    own = {"name": "gpu", "resourceClaimTemplateName": "gpu"}
    pods = [pod(f"w-{i}", claims=(own,)) for i in range(4)]
    for i, p in enumerate(pods):
        p["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": f"w-{i}-gpu"}]
    claims = [claim(f"w-{i}-gpu", p) for i, p in enumerate(pods)]
    events = [event("w-0", "FailedScheduling", "old", "2026-12-01T10:00:00Z"),
              event("w-3", "FailedScheduling", "cannot allocate all claims", "2026-12-01T10:00:05Z")]
    result = tree.build(objects(podgroups=[pg], pods=pods, claims=claims, events=events), "podgroup", "train", NS)
    [node] = group_node(result)
    assert node["state"] == "waiting for the scheduler: 4 of 4 pending"
    assert node["scheduling"]["reason"] == f"Unschedulable: {msg}"
    assert node["scheduling"]["lastEvent"]["object"] == "pod/w-3"
    assert node["claims"] == []
    assert [c["claim"] for c in node["podClaims"]] == ["w-0-gpu", "w-1-gpu", "w-2-gpu", "w-3-gpu"]
    assert not any(c["allocated"] for c in node["podClaims"])
    out = text.render(result)
    assert "members: 4 joined · 0 bound · 4 pending" in out and f"reason: Unschedulable: {msg}" in out
    assert "per-Pod claims: 4 (0 allocated)" in out and "last event: pod/w-3 FailedScheduling" in out


def test_without_a_condition_the_latest_warning_event_is_the_reason():
    pods = [pod(f"w-{i}") for i in range(4)]
    events = [event("w-1", "FailedScheduling", "0/2 nodes are available")]
    [node] = group_node(tree.build(objects(podgroups=[podgroup(claims=())], pods=pods, events=events),
                                   "podgroup", "train", NS))
    assert node["scheduling"]["reason"] == "FailedScheduling: 0/2 nodes are available"


def test_too_few_members_is_told_before_the_scheduler():
    pods = [pod(f"w-{i}") for i in range(3)]
    [node] = group_node(tree.build(objects(podgroups=[podgroup(claims=())], pods=pods), "podgroup", "train", NS))
    assert node["state"] == "waiting for members: 3 of minCount 4 joined"
    [empty] = group_node(tree.build(objects(podgroups=[podgroup(claims=())]), "podgroup", "train", NS))
    assert empty["state"] == "waiting for members: none joined"


def test_labelled_pods_that_did_not_join_are_named():
    pods = [pod("w-0"), pod("w-1", label="train", joined=False), pod("other", label="else", joined=False)]
    [node] = group_node(tree.build(objects(podgroups=[podgroup(claims=())], pods=pods), "podgroup", "train", NS))
    assert node["members"]["joined"] == 1 and node["members"]["labelledNotJoined"] == ["w-1"]
    assert "labelled but not joined (no spec.schedulingGroup): w-1" in text.render({"root": node, "summary": {}})


# --------------------------------------------------------------------------- the silent claim


def test_no_member_entry_leaves_the_groups_claim_unallocated_and_says_so():
    pg = podgroup(generated="train-gpu-abc")
    pods = [pod(f"w-{i}", node="n", claims=()) for i in range(4)]
    [node] = group_node(tree.build(objects(podgroups=[pg], pods=pods, claims=[claim("train-gpu-abc", pg)]),
                                   "podgroup", "train", NS))
    [c] = node["claims"]
    assert not c["allocated"] and c["sharedBy"] == [] and c["noEntry"] == ["w-0", "w-1", "w-2", "w-3"]
    assert c["note"] == ("no member references it exactly: it stays unallocated, silently "
                         "(no member has an entry for it)")


def test_an_entry_that_differs_gets_a_claim_of_its_own():
    pg = podgroup(generated="train-gpu-abc")
    differing = {"name": "gpus", "resourceClaimTemplateName": "gpu"}     # same template, other name
    pods = [pod(f"w-{i}", node="n", claims=(differing,)) for i in range(2)]
    pods.append(pod("w-2", node="n", claims=({"name": "gpu", "resourceClaimName": "mine"},)))   # same name
    for p in pods[:2]:
        p["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": p["metadata"]["name"] + "-x"}]
    own = [claim("w-0-x", pods[0], allocated=True, reserved=[{"resource": "pods", "name": "w-0"}]),
           claim("w-1-x", pods[1], allocated=True, reserved=[{"resource": "pods", "name": "w-1"}])]
    [node] = group_node(tree.build(objects(podgroups=[pg], pods=pods, claims=[claim("train-gpu-abc", pg), *own]),
                                   "podgroup", "train", NS))
    [c] = node["claims"]
    assert c["perPodInstead"] == ["w-0", "w-1", "w-2"] and c["sharedBy"] == []
    assert "members with a differing entry get a claim of their own" in c["note"]
    assert [(x["pod"], x["claim"], x["allocated"]) for x in node["podClaims"]] == [
        ("w-0", "w-0-x", True), ("w-1", "w-1-x", True), ("w-2", "mine", False)]


def test_a_claim_not_generated_yet_and_a_named_claim_that_is_missing():
    pg = podgroup(claims=(CLAIM, {"name": "shared", "resourceClaimName": "big"}))
    [node] = group_node(tree.build(objects(podgroups=[pg], pods=[pod("w-0")]), "podgroup", "train", NS))
    gen, named = node["claims"]
    assert gen["claim"] is None and gen["note"].startswith("not generated yet")
    assert named["claim"] == "big" and named["note"] == "ResourceClaim big does not exist"


# --------------------------------------------------------------------------- Job -> Workload -> PodGroup


def job_objects(template_claims=None):
    j = job(claims=template_claims)
    wl = workload(owner=j)
    pg = podgroup(name="train-wl-t0-x", owner=j, workload_ref={"workloadName": "train-wl", "templateName": "t0"},
                  generated="pg-gpu", condition={"status": "True", "reason": "Scheduled"})
    pods = [pod(f"train-{i}", group="train-wl-t0-x", node="node-1", owner=j) for i in range(4)]
    for p in [wl, pg, *pods]:
        p["metadata"]["managedFields"] = [{"manager": "kube-controller-manager", "operation": "Update",
                                           "fieldsV1": {"f:spec": {"f:x": {}}}}]
    return objects(owners=[j], workloads=[wl], podgroups=[pg], pods=pods,
                   claims=[claim("pg-gpu", pg, allocated=True)])


@pytest.mark.parametrize("asked", [("job", "train"), ("workload", "train-wl"), ("podgroup", "train-wl-t0-x"),
                                   ("Job", "train")])
def test_the_tree_starts_at_the_owner_whatever_is_asked(asked):
    result = tree.build(job_objects(), *asked, NS)
    root = result["root"]
    assert root["kind"] == "Job" and root["name"] == "train"
    [wl] = root["children"]
    [pg] = wl["children"]
    assert wl["kind"] == "Workload" and pg["kind"] == "PodGroup"
    assert wl["templates"] == [{"name": "t0", "kind": "PodGroupTemplate", "policy": "gang", "minCount": 4,
                                "claims": ["gpu"], "depth": 0, "materialized": True}]
    marked = [n["kind"] for n in (root, wl, pg) if n.get("asked")]
    assert marked == [tree.KINDS.get(asked[0].lower(), asked[0])]


def test_claims_the_owners_template_lacks_were_added_at_admission():
    result = tree.build(job_objects(), "job", "train", NS)
    [pg] = group_node(result)
    assert pg["addedAtAdmission"] == [{"field": "spec.resourceClaims[gpu]",
                                       "pods": ["train-0", "train-1", "train-2", "train-3"]}]
    assert pg["setBy"]["created"] == "job-controller (kube-controller-manager)"
    assert pg["members"]["pods"][0]["createdBy"] == "job-controller (kube-controller-manager)"
    out = text.render(result)
    assert "└─ Workload train-wl" in out and "   └─ PodGroup train-wl-t0-x" in out
    assert "added at admission (not in the owner's pod template): spec.resourceClaims[gpu] on 4 Pods" in out
    # The same claim in the template: nothing was added at admission.
    [pg] = group_node(tree.build(job_objects(template_claims=[CLAIM]), "job", "train", NS))
    assert pg["addedAtAdmission"] == []


def test_a_workload_whose_owner_was_not_read_is_the_root_with_a_note():
    objs = job_objects()
    objs["owners"] = []
    result = tree.build(objs, "podgroup", "train-wl-t0-x", NS)
    assert result["root"]["kind"] == "Workload"
    assert result["notes"] == ["owner Job train (controllerRef) was not read"]


def test_a_target_object_owns_its_workload_through_controller_ref():
    tj = {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "metadata": meta("llama"), "spec": {}}
    wl = workload("llama-wl", owner=tj)
    pg = podgroup("llama-0", workload_ref={"workloadName": "llama-wl", "templateName": "t0"})
    result = tree.build(objects(owners=[tj], workloads=[wl], podgroups=[pg]), "TrainJob", "llama", NS)
    assert result["root"]["kind"] == "TrainJob" and result["root"]["asked"]
    assert [c["name"] for c in result["root"]["children"]] == ["llama-wl"]
    assert result["root"]["children"][0]["children"][0]["name"] == "llama-0"


# --------------------------------------------------------------------------- composites


def test_a_composite_lists_its_child_groups_and_how_many_are_scheduled():
    wl = workload(templates=[{"name": "stages", "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                              "podGroupTemplates": [{"name": "prep", "schedulingPolicy": {"gang": {"minCount": 2}}},
                                                    {"name": "train", "schedulingPolicy": {"gang": {"minCount": 2}}}]}])
    wl["spec"]["compositePodGroupTemplates"] = wl["spec"].pop("podGroupTemplates")
    cpg = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", "metadata": meta("stages"),
           "spec": {"workloadRef": {"workloadName": "train-wl", "templateName": "stages"},
                    "schedulingPolicy": {"gang": {"minGroupCount": 2}}}}
    ref = {"workloadName": "train-wl"}
    prep = podgroup("prep", 2, claims=(), parent="stages", workload_ref={**ref, "templateName": "prep"},
                    condition={"status": "True", "reason": "Scheduled"})
    train = podgroup("train", 2, claims=(), parent="stages", workload_ref={**ref, "templateName": "train"})
    result = tree.build(objects(workloads=[wl], composites=[cpg], podgroups=[prep, train]), "podgroup", "train", NS)
    root = result["root"]
    assert root["kind"] == "Workload"
    assert [(t["name"], t["kind"], t["materialized"]) for t in root["templates"]] == [
        ("stages", "CompositePodGroupTemplate", True), ("prep", "PodGroupTemplate", True),
        ("train", "PodGroupTemplate", True)]
    [composite] = root["children"]
    assert composite["kind"] == "CompositePodGroup" and composite["minGroupCount"] == 2
    assert [c["name"] for c in composite["children"]] == ["prep", "train"]
    assert composite["childGroups"] == {"total": 2, "scheduled": 1}
    assert "gang minGroupCount 2" in text.render(result)


def test_a_cycle_of_parents_ends():
    a = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", "metadata": meta("a"),
         "spec": {"parentCompositePodGroupName": "b", "schedulingPolicy": {"basic": {}}}}
    b = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", "metadata": meta("b"),
         "spec": {"parentCompositePodGroupName": "a", "schedulingPolicy": {"basic": {}}}}
    result = tree.build(objects(composites=[a, b], podgroups=[podgroup(parent="a", claims=())]), "podgroup", "train",
                        NS)
    assert result["root"]["kind"] == "CompositePodGroup"


def test_an_object_that_is_not_there():
    with pytest.raises(tree.NotFound, match="PodGroup ml/nope not found"):
        tree.build(objects(), "podgroup", "nope", NS)


def test_objects_of_other_namespaces_are_not_members():
    other = pod("w-0")
    other["metadata"]["namespace"] = "elsewhere"
    [node] = group_node(tree.build(objects(podgroups=[podgroup(claims=())], pods=[other]), "podgroup", "train", NS))
    assert node["members"]["joined"] == 0


# --------------------------------------------------------------------------- provenance and rendering


def test_managed_fields_read_as_who_set_what():
    obj = {"kind": "ResourceClaim", "metadata": {"managedFields": [
        {"manager": "kube-controller-manager", "operation": "Update",
         "fieldsV1": {"f:metadata": {"f:ownerReferences": {}}, "f:spec": {"f:devices": {"f:requests": {}}}}},
        {"manager": "kube-scheduler", "operation": "Update", "subresource": "status",
         "fieldsV1": {"f:status": {"f:allocation": {}, "f:reservedFor": {}}}}]}}
    assert provenance.entries(obj) == [
        {"manager": "kube-controller-manager", "operation": "Update", "subresource": None,
         "fields": ["spec.devices"], "time": None},
        {"manager": "kube-scheduler", "operation": "Update", "subresource": "status",
         "fields": ["status.allocation", "status.reservedFor"], "time": None}]
    assert provenance.summary(obj)[1] == "kube-scheduler (status): status.allocation, status.reservedFor"
    assert provenance.created_by({"kind": "Pod", "metadata": {}}) == "unknown"


def test_colour_only_when_asked():
    result = tree.build(job_objects(), "job", "train", NS)
    plain, coloured = text.render(result), text.render(result, colour=True)
    assert "\033[" not in plain and "\033[32m" in coloured
    assert "note: x" in text.render(result, problems=["x"])


def test_json_is_the_tree_with_the_problems():
    result = tree.build(job_objects(), "job", "train", NS)
    data = json.loads(jsonout.render(result, ["events: forbidden"]))
    assert data["root"]["kind"] == "Job" and data["problems"] == ["events: forbidden"]
    assert data["summary"]["groupClaimsAllocated"] == 1


def test_the_subcommand_parses_and_refuses_a_bare_kind(capsys):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["explain", "job", "-n", NS, "-o", "json"])
    assert args.func is run and args.output == "json"
    assert run(args) == 2 and "give KIND/NAME" in capsys.readouterr().err
    args = parser.parse_args(["explain", "podgroup", "train", "--color", "never"])
    assert (args.object, args.name) == ("podgroup", "train")


def test_the_gang_line_is_the_live_models_state_of_what_explain_read():
    from webhook.gangs import state as sm
    from webhook.gangs.store import group_of, member_of
    pods = [pod(f"w-{i}") for i in range(3)]
    pg = podgroup(claims=())
    [node] = group_node(tree.build(objects(podgroups=[pg], pods=pods), "podgroup", "train", NS))
    want = sm.state(group_of(pg), [member_of(p)[1] for p in pods])
    assert node["gang"] == {"state": "waiting_for_members", "line": "waiting for members 3/4", "reason": None}
    assert node["gang"]["line"] == want.line()
    assert "gang: waiting for members 3/4" in text.render(tree.build(objects(podgroups=[pg], pods=pods),
                                                                     "podgroup", "train", NS))
