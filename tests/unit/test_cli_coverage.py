"""`validate`: what is judged, skipped and unrelated (docs/cli.md#what-is-judged).
Skipped means suspicious only (a configured kind at a version the config does
not cover, no apiVersion/kind); ConfigMaps, Services and Deployments are
unrelated and never fail --fail-on-skipped; `--skip` adds kinds to them; a
JobSet or LeaderWorkerSet without its profile gets a hint naming it; `lws` is
the LeaderWorkerSet profile's short name."""
import json

import pytest
import yaml

from webhook.cli import main

CFG = ["--config", "examples/config.yaml"]
UNRELATED = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ml"}, "data": {"a": "b"}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ml"},
     "spec": {"ports": [{"port": 80}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w", "namespace": "ml"},
     "spec": {"queueName": "q"}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
]
TRAINJOB = {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "metadata": {"name": "t", "namespace": "ml"},
            "spec": {"replicas": 4, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 4}}}}}
POD = {"spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": "registry.example.com/w:1"}]}}
# minCount 3 where LWS requires the group size (4): invalid under the profile.
LWS = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "l", "namespace": "ml"},
       "spec": {"leaderWorkerTemplate": {"size": 4, "workerTemplate": POD},
                "scheduling": {"schedulingPolicy": {"gang": {"minCount": 3}}}}}
JOBSET = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js", "namespace": "ml"},
          "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {"parallelism": 4,
                                                                                      "template": POD}}}],
                   "scheduling": {"schedulingPolicy": {"gang": {"minCount": 9}}}}}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, objs, name="m.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


def test_unrelated_kinds_are_counted_apart_and_never_fail_the_skipped_gate(tmp_path, capsys):
    path = write(tmp_path, [*UNRELATED, TRAINJOB])
    code, out, err = run(capsys, "validate", "-f", path, "--fail-on-skipped", *CFG)
    assert code == 0, out + err
    assert "ConfigMap ml/c: unrelated (no rules for ConfigMap.core: not a target of the configuration)" in out
    assert "PriorityClass high: unrelated" in out and "skipped" not in out
    assert "1 object(s) checked, 0 invalid, 0 skipped (suspicious), 4 unrelated" in err
    code, out, _ = run(capsys, "validate", "-f", path, "-o", "json", *CFG)
    assert sorted(r["status"] for r in json.loads(out)) == ["unrelated"] * 4 + ["valid"]


def test_a_deployment_is_judged_by_its_pod_template_not_passed_as_unrelated(tmp_path, capsys):
    bad = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ml"},
           "spec": {"template": {"metadata": {"labels": {"scheduling.k8s.io/pod-group": "Not_A_Name"}},
                                 "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    code, out, err = run(capsys, "validate", "-f", write(tmp_path, [bad]), *CFG)
    assert code == 1, out + err
    assert "spec.template.metadata.labels[scheduling.k8s.io/pod-group]" in out and "(POD-1)" in out
    assert "1 object(s) checked, 1 invalid" in err


def test_skipped_is_a_configured_kind_at_an_uncovered_version_or_no_kind(tmp_path, capsys):
    v2 = {**TRAINJOB, "apiVersion": "training.example.com/v2"}
    workload_v1 = {"apiVersion": "scheduling.k8s.io/v1", "kind": "Workload", "metadata": {"name": "w"}}
    path = write(tmp_path, [v2, workload_v1, {"metadata": {"name": "no-kind"}}, *UNRELATED])
    code, out, err = run(capsys, "validate", "-f", path, *CFG)
    assert code == 0
    assert "TrainJob ml/t: skipped (no rules for training.example.com/v2 TrainJob (the rules cover v1alpha1))" in out
    assert "Workload w: skipped (no rules for scheduling.k8s.io/v1 Workload (the rules cover v1beta1, v1alpha3))" in out
    assert "<no kind> no-kind: skipped (no apiVersion/kind)" in out
    assert "3 skipped (suspicious), 4 unrelated" in err and "--fail-on-skipped makes the 3 skipped fail" in err
    code, out, err = run(capsys, "validate", "-f", path, "--fail-on-skipped", *CFG)
    assert code == 1 and "exit 1 because of 3 skipped (--fail-on-skipped)" in err


@pytest.mark.parametrize("skip", ["TrainJob", "TrainJob.training.example.com", "training.example.com/v2/TrainJob",
                                  "ConfigMap,TrainJob"])
def test_skip_takes_kinds_out_of_the_judgement(tmp_path, capsys, skip):
    v2 = {**TRAINJOB, "apiVersion": "training.example.com/v2"}
    path = write(tmp_path, [v2])
    assert run(capsys, "validate", "-f", path, "--fail-on-skipped", *CFG)[0] == 1
    code, out, err = run(capsys, "validate", "-f", path, "--fail-on-skipped", "--skip", skip, *CFG)
    assert code == 0, out + err
    assert "TrainJob ml/t: unrelated (--skip)" in out and "0 skipped (suspicious), 1 unrelated" in err


def test_skip_also_silences_a_judged_kind(tmp_path, capsys):
    bad = {**TRAINJOB, "spec": {"replicas": 4, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 9}}}}}
    path = write(tmp_path, [bad])
    assert run(capsys, "validate", "-f", path, *CFG)[0] == 1
    assert run(capsys, "validate", "-f", path, "--skip", "TrainJob", "--skip", "Pod", *CFG)[0] == 0


def test_a_jobset_or_lws_without_its_profile_gets_a_hint(tmp_path, capsys):
    path = write(tmp_path, [JOBSET, LWS, JOBSET | {"metadata": {"name": "js2", "namespace": "ml"}}])
    code, out, err = run(capsys, "validate", "-f", path)
    assert code == 0
    assert ("JobSet ml/js: unrelated (no rules for JobSet.jobset.x-k8s.io: not a target of the configuration; "
            "--profile jobset judges it)") in out
    assert "--profile lws judges it" in out
    assert "hint: JobSet objects were not judged: --profile jobset judges them" in err
    assert "hint: LeaderWorkerSet objects were not judged: --profile lws judges them" in err
    code, out, err = run(capsys, "validate", "-f", path, "--profile", "jobset", "--profile", "lws")
    assert code == 1 and "hint" not in err
    assert "JobSet ml/js: spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 9" in out
    assert "LeaderWorkerSet ml/l: spec.scheduling.schedulingPolicy.gang.minCount" in out


def test_lws_is_the_leaderworkerset_profiles_short_name_in_a_config_too(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("profiles: [lws]\n")
    path = write(tmp_path, [LWS])
    code, out, _ = run(capsys, "validate", "-f", path, "--config", str(cfg))
    assert code == 1 and "LeaderWorkerSet ml/l: spec.scheduling.schedulingPolicy.gang.minCount" in out
    cfg.write_text("profiles: [lws, leaderworkerset]\n")
    assert run(capsys, "validate", "-f", path, "--config", str(cfg))[0] == 2      # the same profile twice


def test_a_pod_given_with_old_is_not_judged_and_says_why(tmp_path, capsys):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, **POD}
    path = write(tmp_path, [pod])
    code, out, err = run(capsys, "validate", "-f", path, "--old", path)
    assert code == 0 and "Pod ml/p: unrelated (Pod is judged on create only)" in out
