"""A batch/v1 Job's and a CronJob's `scheduling`, judged built in (webhook/rules/job.py) as
kube-apiserver 1.37 judges it: no profile, the API server's words, no rule id. The live
agreement with kube-apiserver is tests/e2e/test_job_agreement.py; with upstream's code,
tests/e2e/test_upstream_oracle.py (the `batch-job` embedding)."""
from __future__ import annotations

import copy

import pytest

from webhook import engine
from webhook.cli import main
from webhook.config import from_dict

ON = from_dict({"featureGates": {"WorkloadWithJob": True}})
POD = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}


def job(scheduling=None, parallelism=None, **spec) -> dict:
    body = {"template": copy.deepcopy(POD), **spec}
    if scheduling is not None:
        body["scheduling"] = scheduling
    if parallelism is not None:
        body["parallelism"] = parallelism
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ml"}, "spec": body}


def cronjob(scheduling=None, parallelism=None) -> dict:
    inner = job(scheduling, parallelism)["spec"]
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj", "namespace": "ml"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": inner}}}


def judge(obj, old=None, cfg=ON, scope="cli"):
    return engine.validate(engine.Request.for_object(obj, old), cfg, scope=scope)


def lines(verdict) -> list[str]:
    return [str(e) for e in verdict.errors]


GANG = lambda n: {"schedulingPolicy": {"gang": {"minCount": n}}}       # noqa: E731


def test_a_job_is_judged_without_any_profile():
    verdict = judge(job({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}))
    assert verdict.checked and not verdict.allowed
    assert lines(verdict) == ["spec.scheduling.disruptionMode: Invalid value: \"\": the disruptionMode `all` is not "
                              "supported with the Basic scheduling policy"]


def test_min_count_over_parallelism_in_the_api_servers_words_without_a_rule_id():
    verdict = judge(job(GANG(5), parallelism=4))
    assert lines(verdict) == ["spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 5: "
                              "must not be greater than parallelism (4)"]
    assert [e.rule for e in verdict.errors] == [None]


def test_parallelism_defaults_to_1_and_completions_never_bounds():
    assert lines(judge(job(GANG(2)))) == ["spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 2: "
                                          "must not be greater than parallelism (1)"]
    assert judge(job(GANG(2), parallelism=2, completions=10)).allowed
    assert not judge(job(GANG(3), parallelism=2, completions=5)).allowed


def test_the_job_rules_are_mirrors_no_policy_switches_or_relaxes_them():
    relaxed = from_dict({"featureGates": {"WorkloadWithJob": True},
                         "policies": {"minCountWithinSize": False, "forbidAllWithBasic": False},
                         "enforcement": {"default": "audit"}})
    assert not judge(job(GANG(5), parallelism=4), cfg=relaxed).allowed
    assert not judge(job({"disruptionMode": {"all": {}}}), cfg=relaxed).allowed


def test_the_hand_written_rules_run_on_every_update():
    """Lowering parallelism below a stored minCount is refused, as kube-apiserver refuses it."""
    old, new = job(GANG(4), parallelism=4), job(GANG(4), parallelism=2)
    assert lines(judge(new, old)) == ["spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 4: "
                                      "must not be greater than parallelism (2)"]
    same = job({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})
    assert not judge(same, copy.deepcopy(same)).allowed      # an unchanged basic + all: still refused


def test_scheduling_cannot_be_added_or_removed_and_it_is_a_mirror():
    added = judge(job({"schedulingPolicy": {"basic": {}}}), job())
    assert [(str(e.field), e.detail, e.rule) for e in added.errors] == \
        [("spec.scheduling", "field cannot be set once created", None)]
    removed = judge(job(), job({"schedulingPolicy": {"basic": {}}}))
    assert [(str(e.field), e.detail) for e in removed.errors] == [("spec.scheduling", "field cannot be cleared once set")]


def test_a_job_freezes_the_variant_a_cronjob_does_not():
    assert [str(e.field) for e in judge(job(GANG(1)), job({"schedulingPolicy": {"basic": {}}})).errors] == \
        ["spec.scheduling.schedulingPolicy"]
    # CronJob: "switching policy from basic to gang is allowed for cronjob" (upstream's DV test); its
    # other blocks stay frozen, and its Jobs' minCount <= parallelism holds in the template too.
    assert judge(cronjob(GANG(1)), cronjob({"schedulingPolicy": {"basic": {}}})).allowed
    frozen = judge(cronjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}}}),
                   cronjob({"schedulingPolicy": {"basic": {}}}))
    assert [str(e.field) for e in frozen.errors] == ["spec.jobTemplate.spec.scheduling.disruptionMode"]
    assert lines(judge(cronjob(GANG(3), parallelism=2))) == [
        "spec.jobTemplate.spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 3: "
        "must not be greater than parallelism (2)"]


def test_the_gate_is_workload_with_job_off_by_default():
    verdict = judge(job({"schedulingPolicy": {"basic": {}}}), cfg=from_dict({}))
    assert lines(verdict) == ["spec.scheduling: Forbidden: disabled by feature-gate WorkloadWithJob"]
    assert judge(job(), cfg=from_dict({})).allowed                        # no scheduling: nothing gated
    stored = job({"schedulingPolicy": {"basic": {}}})
    assert judge(copy.deepcopy(stored), stored, cfg=from_dict({})).allowed  # unchanged: ratchets


def test_a_configured_job_target_is_judged_by_the_built_in_rules():
    """The undocumented `--profile job-template:Job.batch:spec` reported the upstream bound as (POL-3)."""
    cfg = from_dict({"featureGates": {"WorkloadWithJob": True},
                     "profiles": [{"name": "job-template", "group": "batch", "kind": "Job", "jobSpec": "spec"}]})
    [error] = judge(job(GANG(5), parallelism=4), cfg=cfg).errors
    assert error.rule is None and error.detail == "must not be greater than parallelism (4)"


def test_the_configs_own_limits_still_apply_to_a_job():
    cfg = from_dict({"featureGates": {"WorkloadWithJob": True}, "limits": {"maxMinCount": 2}})
    [error] = judge(job(GANG(3), parallelism=4), cfg=cfg).errors
    assert error.rule == "POL-3" and "limits.maxMinCount" in error.detail


@pytest.mark.parametrize("scheduling", [{"schedulingPolicy": "gang"}, "basic", {"disruptionMode": {"all": 1}}])
def test_wrong_types_get_a_field_error(scheduling):
    verdict = judge(job(scheduling))
    assert not verdict.allowed and all(str(e.field).startswith("spec.scheduling") for e in verdict.errors)


def test_validate_no_longer_skips_a_job(tmp_path, capsys):
    """The issue: a Job with basic + all was `skipped (no rules …)`, exit 0."""
    import yaml
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})))
    cfg = tmp_path / "config.yaml"
    cfg.write_text("featureGates: {WorkloadWithJob: true}\n")
    code = main(["validate", "-f", str(path), "--config", str(cfg)])
    out, err = capsys.readouterr()
    assert code == 1 and "skipped" not in out and "1 object(s) checked, 1 invalid" in err
    assert "Job ml/j: spec.scheduling.disruptionMode: Invalid value" in out
