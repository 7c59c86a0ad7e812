"""The kopf example operator's pure part (examples/kopf-operator/trainjob_objects.py):
what it creates for a TrainJob, without kopf or a cluster."""
from __future__ import annotations

import importlib.util
import os

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("trainjob_objects", os.path.join(REPO, "examples", "kopf-operator",
                                                                              "trainjob_objects.py"))
trainjob_objects = importlib.util.module_from_spec(spec)
spec.loader.exec_module(trainjob_objects)


def trainjob(**scheduling) -> dict:
    doc = next(yaml.safe_load_all(open(os.path.join(REPO, "examples", "valid", "trainjob-gang.yaml"))))
    doc["metadata"]["uid"] = "0f6b3c1e-5d0a-4a59-9a8c-6a3f2b1d7e21"
    if scheduling:
        doc["spec"]["scheduling"] = scheduling
    return doc


def test_a_gang_trainjob_gets_its_workload_pod_group_and_pods():
    objs = trainjob_objects.objects_for(trainjob())
    assert [o["kind"] for o in objs] == ["Workload", "PodGroup"] + ["Pod"] * 8
    wl, pg, pod = objs[0], objs[1], objs[2]
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 8}}
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": pg["metadata"]["name"]}
    assert pod["metadata"]["labels"] == {"scheduling.k8s.io/pod-group": pg["metadata"]["name"],
                                         "scheduling.k8s.io/workload": wl["metadata"]["name"]}
    owners = {o["metadata"]["ownerReferences"][0]["uid"] for o in objs}
    assert owners == {"0f6b3c1e-5d0a-4a59-9a8c-6a3f2b1d7e21"}


def test_an_unset_min_count_is_the_replica_count_and_bad_blocks_are_errors():
    objs = trainjob_objects.objects_for(trainjob(schedulingPolicy={"gang": {}}))
    assert objs[1]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 8}}
    errors = trainjob_objects.errors_for(trainjob(schedulingPolicy={"basic": {}}, disruptionMode={"all": {}}))
    assert [str(e.field) for e in errors] == ["spec.scheduling.disruptionMode"] and errors[0].rule == "DIS-2"
