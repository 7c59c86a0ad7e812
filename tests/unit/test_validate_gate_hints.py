"""A refusal because a feature gate is off knows its gate (FieldError.gate, data): the
API server's words stay as they are (the error's text, the admission answer), and
`validate` adds, in every output format, the config key that turns the gate on."""
from __future__ import annotations

import json
import pickle

import pytest
import yaml

from webhook import engine
from webhook.admission import review
from webhook.cli import main
from webhook.config import DEFAULT_GATES, from_dict
from webhook.field import FieldError, Path, gated_off
from webhook import forks
from webhook.validate import parallel_judging
from webhook.validate.output.model import gate_hint

SCHED = "scheduling.k8s.io/v1beta1"
GANG = {"gang": {"minCount": 2}}


def job(kind="Job"):
    spec = {"parallelism": 2, "scheduling": {"schedulingPolicy": GANG},
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}
    if kind == "CronJob":
        return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj", "namespace": "ml"},
                "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": spec}}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml"}, "spec": spec}


def podgroup(**spec):
    return {"apiVersion": SCHED, "kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ml"},
            "spec": {"schedulingPolicy": GANG, **spec}}


def workload(**spec):
    return {"apiVersion": SCHED, "kind": "Workload", "metadata": {"name": "w", "namespace": "ml"}, "spec": spec}


TEMPLATE = {"name": "t", "schedulingPolicy": GANG}
CLAIM = [{"name": "gpu", "resourceClaimTemplateName": "gpus"}]
# (gate, object, the field it refuses): every gate the engine refuses something for.
GATED = [
    ("WorkloadWithJob", job(), "spec.scheduling"),
    ("WorkloadWithJob", job("CronJob"), "spec.jobTemplate.spec.scheduling"),
    ("CompositePodGroup", workload(compositePodGroupTemplates=[{"name": "c", "schedulingPolicy": {"basic": {}},
                                                                "podGroupTemplates": [TEMPLATE]}]),
     "spec.compositePodGroupTemplates"),
    ("CompositePodGroup", podgroup(parentCompositePodGroupName="c", workloadRef={"workloadName": "w",
                                                                                "templateName": "t"}),
     "spec.parentCompositePodGroupName"),
    ("DRAWorkloadResourceClaims", podgroup(resourceClaims=CLAIM), "spec.resourceClaims"),
    ("DRAWorkloadResourceClaims", workload(podGroupTemplates=[{**TEMPLATE, "resourceClaims": CLAIM}]),
     "spec.podGroupTemplates[0].resourceClaims"),
    ("TopologyAwareWorkloadScheduling",
     podgroup(schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/zone"}]}),
     "spec.schedulingConstraints"),
    ("PodGroupPreemptionPolicy", workload(podGroupTemplates=[{**TEMPLATE, "preemptionPolicy": "Never"}]),
     "spec.podGroupTemplates[0].preemptionPolicy"),
]
IDS = [f"{g}-{o['kind']}" for g, o, _ in GATED]


def gates_off(gate: str):
    on = {g: True for g in DEFAULT_GATES}
    return from_dict({"featureGates": {**on, gate: False}, "policies": {"checkPodGroupAgainstWorkload": False}})


def gates_on():
    return from_dict({"featureGates": {g: True for g in DEFAULT_GATES},
                      "policies": {"checkPodGroupAgainstWorkload": False}})


@pytest.mark.parametrize("gate,obj,field", GATED, ids=IDS)
def test_the_refusal_knows_its_gate_and_says_what_the_api_server_says(gate, obj, field):
    verdict = engine.validate(engine.Request.for_object(obj), gates_off(gate))
    [refusal] = [e for e in verdict.errors if e.gate]
    assert (refusal.gate, str(refusal.field), refusal.type) == (gate, field, "Forbidden")
    assert str(refusal) == f"{field}: Forbidden: disabled by feature-gate {gate}"      # no hint in the error
    # The admission answer is the API server's: no hint, no config key.
    answer = review.respond("u", verdict)["response"]
    assert "featureGates" not in json.dumps(answer) and "hint" not in json.dumps(answer)
    assert f"{field}: Forbidden: disabled by feature-gate {gate}" in answer["status"]["message"]
    # With the gate on, nothing refuses it.
    assert not [e for e in engine.validate(engine.Request.for_object(obj), gates_on()).errors if e.gate]


def test_every_gate_refusal_of_the_engine_carries_its_gate():
    """Whatever a gate refuses, offline, is data: no `disabled by feature-gate` text without a gate."""
    seen = set()
    for gate, obj, _ in GATED:
        for cfg in (gates_off(gate), from_dict(None)):
            for e in engine.validate(engine.Request.for_object(obj), cfg).errors:
                if "disabled by feature-gate" in e.detail:
                    assert e.gate and e.detail == f"disabled by feature-gate {e.gate}", e
                    seen.add(e.gate)
    assert seen == {g for g, on in DEFAULT_GATES.items() if g != "GenericWorkload"}


def test_the_gate_survives_pickling_and_the_forked_parts():
    e = gated_off(Path("spec", "scheduling"), "WorkloadWithJob")
    again = pickle.loads(pickle.dumps(e, protocol=pickle.HIGHEST_PROTOCOL))
    assert again == e and again.gate == "WorkloadWithJob" and str(again) == str(e)
    assert e == FieldError("Forbidden", e.field, e.value, e.detail)      # the gate is no part of its identity


def test_validate_in_forked_parts_keeps_the_hint(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(parallel_judging, "MIN_PER_PART", 2)
    monkeypatch.setattr(forks, "usable_cores", lambda: 2)      # as test_parallel_judging: whatever the machine has
    assert parallel_judging.parts_for(8) == 2
    docs = []
    for i in range(8):
        j = job()
        j["metadata"]["name"] = f"train-{i}"
        docs.append(j)
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert main(["validate", "-f", str(path), "-o", "json", "-q"]) == 1
    records = json.loads(capsys.readouterr().out)
    assert len(records) == 8
    assert {r["errors"][0]["hint"] for r in records} == {gate_hint("WorkloadWithJob")}


@pytest.fixture
def job_file(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job(), sort_keys=False))
    return path


HINT = "featureGates.WorkloadWithJob: true in --config"


def test_every_format_names_the_config_key(job_file, capsys):
    outputs = {}
    for fmt in ("text", "json", "junit", "sarif", "github"):
        assert main(["validate", "-f", str(job_file), "-o", fmt, "-q"]) == 1
        outputs[fmt] = capsys.readouterr().out
        assert HINT in outputs[fmt], fmt
    # text: the error as kubectl prints it, then the hint, at the field's line and column
    # (`scheduling` is the 8th line: yaml.safe_dump keeps the keys' order).
    assert outputs["text"].strip() == (f"{job_file}:8:3: Job ml/train: spec.scheduling: Forbidden: disabled by "
                                       f"feature-gate WorkloadWithJob (hint: {gate_hint('WorkloadWithJob')})")
    # json: the detail stays the API server's, the hint is a key of its own.
    [error] = json.loads(outputs["json"])[0]["errors"]
    assert error["detail"] == "disabled by feature-gate WorkloadWithJob"
    assert error["hint"] == gate_hint("WorkloadWithJob")
    [result] = json.loads(outputs["sarif"])["runs"][0]["results"]
    assert result["message"]["text"].endswith(f"(hint: {gate_hint('WorkloadWithJob')})")
    assert outputs["github"].startswith(f"::error file={job_file},line=8,col=3,title=FieldValueForbidden::")


def test_no_hint_where_no_gate_refuses(job_file, tmp_path, capsys):
    cfg = tmp_path / "on.yaml"
    cfg.write_text(yaml.safe_dump({"featureGates": {"WorkloadWithJob": True}}))
    assert main(["validate", "-f", str(job_file), "--config", str(cfg), "-o", "json"]) == 0
    [record] = json.loads(capsys.readouterr().out)
    assert record["status"] == "valid"
    bad = tmp_path / "bad.yaml"
    obj = job()
    obj["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] = 5
    bad.write_text(yaml.safe_dump(obj))
    assert main(["validate", "-f", str(bad), "--config", str(cfg), "-o", "json"]) == 1
    [error] = json.loads(capsys.readouterr().out)[0]["errors"]
    assert "hint" not in error and error["detail"] == "must not be greater than parallelism (2)"
