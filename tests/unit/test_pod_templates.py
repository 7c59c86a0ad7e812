"""The Pod rules on the pod templates of Deployments, StatefulSets, ReplicaSets,
DaemonSets, Jobs and CronJobs (webhook/rules/pod_templates.py): the error each Pod
would get, at the template's own path."""
from __future__ import annotations

import copy

import pytest

from webhook import engine
from webhook.config import from_dict
from webhook.rules import pods

CFG = from_dict({})
LABEL = "scheduling.k8s.io/pod-group"
TEMPLATE_AT = {
    ("apps/v1", "Deployment"): "spec.template",
    ("apps/v1", "StatefulSet"): "spec.template",
    ("apps/v1", "ReplicaSet"): "spec.template",
    ("apps/v1", "DaemonSet"): "spec.template",
    ("batch/v1", "Job"): "spec.template",
    ("batch/v1", "CronJob"): "spec.jobTemplate.spec.template",
}


def holder(api_version: str, kind: str, labels=None, schedulingGroup=None) -> dict:
    template = {"metadata": {"labels": labels or {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    if schedulingGroup is not None:
        template["spec"]["schedulingGroup"] = schedulingGroup
    spec: dict = {"template": template}
    if kind == "CronJob":
        spec = {"schedule": "* * * * *", "jobTemplate": {"spec": spec}}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "ml"}, "spec": spec}


def judge(obj, old=None):
    return engine.validate(engine.Request.for_object(obj, old), CFG, scope="cli")


@pytest.mark.parametrize("api_version,kind", list(TEMPLATE_AT))
def test_a_bad_group_label_is_refused_at_the_templates_path(api_version, kind):
    verdict = judge(holder(api_version, kind, labels={LABEL: "Not_A_Name"}))
    [error] = verdict.errors
    assert verdict.checked and error.rule == "POD-1"
    assert str(error.field) == f"{TEMPLATE_AT[(api_version, kind)]}.metadata.labels[{LABEL}]"


@pytest.mark.parametrize("api_version,kind", list(TEMPLATE_AT))
def test_label_and_scheduling_group_naming_two_groups_is_pod_3(api_version, kind):
    [error] = judge(holder(api_version, kind, labels={LABEL: "a"}, schedulingGroup={"podGroupName": "b"})).errors
    assert error.rule == "POD-3"
    assert str(error.field) == f"{TEMPLATE_AT[(api_version, kind)]}.spec.schedulingGroup.podGroupName"


def test_the_template_gets_exactly_what_its_pods_would_get():
    obj = holder("apps/v1", "Deployment", labels={LABEL: "a"}, schedulingGroup={"podGroupName": "Bad_Name"})
    template = obj["spec"]["template"]
    as_pod = [(e.type, "spec.template." + str(e.field), e.detail, e.rule) for e in pods.check_pod(template, CFG)]
    assert as_pod and [(e.type, str(e.field), e.detail, e.rule) for e in judge(obj).errors] == as_pod


def test_a_good_template_is_checked_and_valid():
    verdict = judge(holder("apps/v1", "StatefulSet", labels={LABEL: "train"}, schedulingGroup={"podGroupName": "train"}))
    assert verdict.checked and verdict.allowed


def test_a_template_of_the_wrong_type_is_an_error_not_a_crash():
    obj = holder("apps/v1", "Deployment")
    obj["spec"]["template"] = "x"
    [error] = judge(obj).errors
    assert str(error.field) == "spec.template" and error.type == "Invalid"


def test_an_update_reports_only_what_the_stored_template_did_not_break():
    stored = holder("apps/v1", "Deployment", labels={LABEL: "Not_A_Name"})
    scaled = copy.deepcopy(stored)
    scaled["spec"]["replicas"] = 3
    assert judge(scaled, stored).allowed
    broken = holder("apps/v1", "Deployment", labels={LABEL: "a"}, schedulingGroup={"podGroupName": "b"})
    assert [e.rule for e in judge(broken, holder("apps/v1", "Deployment", labels={LABEL: "a"})).errors] == ["POD-3"]


def test_pod_rules_are_own_policy_and_enforcement_relaxes_them_on_templates_too():
    cfg = from_dict({"enforcement": {"rules": {"POD-1": "warn"}}})
    verdict = engine.validate(engine.Request.for_object(holder("apps/v1", "DaemonSet", labels={LABEL: "Not_A_Name"})),
                              cfg, scope="cli")
    assert verdict.allowed and [e.rule for e in verdict.warned] == ["POD-1"]


def test_other_versions_and_kinds_stay_unjudged():
    assert not judge(holder("apps/v1beta2", "Deployment", labels={LABEL: "Not_A_Name"})).checked
    assert not judge({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                      "template": {"metadata": {"labels": {LABEL: "Not_A_Name"}}}}).checked
