"""`workload-webhook render`: the objects for valid targets, the engine's errors at the
object's own paths for invalid ones, and validate's exit codes (0, 1, 2)."""
from __future__ import annotations

import json
import os

import yaml

from webhook.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(REPO, "examples", "config.yaml")


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["render", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_valid_trainjob_renders_its_workload_and_pod_group(capsys):
    code, out, err = run(capsys, "--config", CONFIG, "-f", os.path.join(REPO, "examples", "valid", "trainjob-gang.yaml"))
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["Workload", "PodGroup"] * 2
    wl, pg = docs[:2]
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "TrainJob" and wl["metadata"]["namespace"] == "ml"
    assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 8}}
    assert pg["spec"]["workloadRef"] == {"workloadName": wl["metadata"]["name"],
                                         "templateName": "llama-finetune-pgt-0"}
    assert pg["spec"]["resourceClaims"] == [{"name": "interconnect", "resourceClaimTemplateName": "nvlink-domain"}]


def test_a_composite_renders_its_composite_pod_group_and_children(capsys):
    code, out, _ = run(capsys, "--config", CONFIG, "-f", os.path.join(REPO, "examples", "valid", "groupjob.yaml"),
                       "-o", "json")
    assert code == 0
    items = json.loads(out)["items"]
    assert [o["kind"] for o in items] == ["Workload", "CompositePodGroup", "PodGroup", "PodGroup"]
    parent = items[1]["metadata"]["name"]
    assert all(pg["spec"]["parentCompositePodGroupName"] == parent for pg in items[2:])
    assert [pg["spec"]["schedulingPolicy"]["gang"]["minCount"] for pg in items[2:]] == [1, 16]


def test_an_invalid_object_gets_its_errors_and_exit_1(capsys):
    code, out, err = run(capsys, "--config", CONFIG, "-f",
                         os.path.join(REPO, "examples", "invalid", "trainjob-all-with-basic.yaml"))
    assert code == 1 and out == ""
    assert "TrainJob ml/all-with-basic: spec.scheduling.disruptionMode: Invalid value" in err and "(DIS-2)" in err


def test_no_target_is_noted_and_a_missing_file_is_a_usage_error(capsys):
    code, out, err = run(capsys, "--config", CONFIG, "-f", os.path.join(REPO, "examples", "valid", "podgroup.yaml"))
    assert code == 0 and out == "" and "not a target: nothing to render" in err
    code, _, err = run(capsys, "-f", os.path.join(REPO, "no-such-file.yaml"))
    assert code == 2 and "no such file" in err
