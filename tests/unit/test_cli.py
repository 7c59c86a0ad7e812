"""`workload-webhook validate` and `mutate` (docs/cli.md) on real files."""
import json

import yaml

from webhook.cli import main

CFG = ["--config", "examples/config.yaml"]


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_valid_examples_exit_0(capsys):
    code, out, err = run(capsys, "validate", "-f", "examples/valid", *CFG)
    assert code == 0, out
    assert out.count(": valid") == 6 and "0 invalid" in err


def test_invalid_examples_exit_1_with_kubectl_like_lines(capsys):
    code, out, _ = run(capsys, "validate", "-f", "examples/invalid", *CFG)
    assert code == 1
    # file:line:column of the field, then the object and kubectl's error line.
    assert ("examples/invalid/trainjob-all-with-basic.yaml:10:5: TrainJob ml/all-with-basic: "
            "spec.scheduling.disruptionMode: Invalid value: ") in out
    assert "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 12: must be less than or equal to spec.replicas (8)" in out
    assert "Too many: 2: must have at most 1 item" in out
    assert "spec.compositePodGroupTemplates[0].podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value" in out
    # The jobset profile, from examples/config.yaml.
    assert ("JobSet ml/too-big: spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 9: must be less than or "
            "equal to Σ replicas × template.spec.parallelism of spec.replicatedJobs[*] (8)") in out
    assert "JobSet ml/too-big: spec.replicatedJobs[0].template.spec.template.spec.schedulingGroup: Forbidden" in out


def test_json_output_shape(capsys):
    code, out, _ = run(capsys, "validate", "-f", "examples/invalid/trainjob-all-with-basic.yaml", "-o", "json", *CFG)
    assert code == 1
    [entry] = json.loads(out)
    assert set(entry) == {"file", "line", "apiVersion", "kind", "namespace", "name", "status", "fails", "allowed",
                          "action", "skipped", "unrelated", "errors", "warned", "audited", "warnings"}
    assert entry["skipped"] is None and entry["unrelated"] is None
    assert entry["apiVersion"] == "training.example.com/v1alpha1" and entry["status"] == "invalid" and entry["fails"]
    assert entry["allowed"] is False and entry["action"] == "deny" and entry["errors"][0]["rule"] == "DIS-2"
    assert entry["allowed"] is False and entry["kind"] == "TrainJob" and entry["namespace"] == "ml"
    assert entry["errors"][0]["field"] == "spec.scheduling.disruptionMode"
    assert entry["errors"][0]["type"] == "Invalid"
    assert (entry["errors"][0]["line"], entry["errors"][0]["column"]) == (10, 5)


def test_old_makes_an_update_check(tmp_path, capsys):
    old = tmp_path / "old.yaml"
    new = tmp_path / "new.yaml"
    base = {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "metadata": {"name": "t", "namespace": "ml"},
            "spec": {"replicas": 4, "scheduling": {"schedulingPolicy": {"basic": {}}}}}
    old.write_text(yaml.safe_dump(base))
    base["spec"]["scheduling"]["schedulingPolicy"] = {"gang": {"minCount": 2}}
    new.write_text(yaml.safe_dump(base))
    assert run(capsys, "validate", "-f", str(new), *CFG)[0] == 0
    code, out, _ = run(capsys, "validate", "-f", str(new), "--old", str(old), *CFG)
    assert code == 1 and "schedulingPolicy: Invalid value: null" in out and "immutable" in out


def test_multidoc_json_and_list(tmp_path, capsys):
    (tmp_path / "a.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "a"},
         "spec": {"schedulingPolicy": {"gang": {"minCount": 0}}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]}))
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path))
    assert code == 1
    assert "PodGroup a: spec.schedulingPolicy.gang.minCount: Required value" in out
    assert "ConfigMap c: unrelated (no rules for ConfigMap.core: not a target of the configuration)" in out


def test_broken_file_and_missing_path(tmp_path, capsys):
    (tmp_path / "bad.yaml").write_text("a: [1, 2\n")
    code, out, _ = run(capsys, "validate", "-f", str(tmp_path / "bad.yaml"))
    assert code == 2 and "not valid YAML" in out
    code, _, err = run(capsys, "validate", "-f", str(tmp_path / "nope.yaml"))
    assert code == 2 and "no such file" in err


def test_usage_error_exit_2(capsys):
    assert run(capsys, "validate")[0] == 2


def test_mutate_pod_prints_object_and_patch(capsys):
    code, out, _ = run(capsys, "mutate", "-f", "examples/pods/worker.yaml", "--context", "examples/valid", *CFG)
    assert code == 0
    pod = yaml.safe_load(out)
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "llama-finetune-workers-0"}
    assert pod["spec"]["resourceClaims"] == [{"name": "interconnect", "resourceClaimTemplateName": "nvlink-domain"}]
    code, out, _ = run(capsys, "mutate", "-f", "examples/pods/worker.yaml", "--context", "examples/valid", "-o", "patch", *CFG)
    ops = json.loads(out)
    assert {"op": "add", "path": "/metadata/labels/scheduling.k8s.io~1workload", "value": "llama-finetune"} in ops


def test_mutate_crd_defaults_and_empty_patch(tmp_path, capsys):
    f = tmp_path / "tj.yaml"
    f.write_text(yaml.safe_dump({"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob",
                                 "metadata": {"name": "t"}, "spec": {"replicas": 3, "scheduling": {
                                     "schedulingPolicy": {"gang": {}}}}}))
    code, out, _ = run(capsys, "mutate", "-f", str(f), "-o", "patch", *CFG)
    assert code == 0 and json.loads(out) == [
        {"op": "add", "path": "/spec/scheduling/schedulingPolicy/gang/minCount", "value": 3}]
    code, out, _ = run(capsys, "mutate", "-f", "examples/valid/workload.yaml", "-o", "patch", *CFG)
    assert code == 0 and json.loads(out) == []


def test_mutate_denial_exit_1(tmp_path, capsys):
    f = tmp_path / "pod.yaml"
    f.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "labels": {"scheduling.k8s.io/pod-group": "a"}}, "spec": {"schedulingGroup": {"podGroupName": "b"},
                                                                              "containers": []}}))
    code, out, err = run(capsys, "mutate", "-f", str(f), *CFG)
    assert code == 1 and "spec.schedulingGroup.podGroupName: Invalid value" in err


def test_schemas_command(capsys):
    code, out, _ = run(capsys, "schemas")
    assert code == 0 and "config" in out.split() and "blocks/scheduling-policy" in out.split()
    code, out, _ = run(capsys, "schemas", "blocks/disruption-mode")
    assert json.loads(out)["$schema"].endswith("2020-12/schema")
    assert run(capsys, "schemas", "nope")[0] == 2
