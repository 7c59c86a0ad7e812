"""The VAP export as data: what is expressible, what is left (and why), one
policy per enforcement action, and the registration's replace mode. That the
expressions compile, fit the cost budget and judge like the webhook is proven
on a real API server (tests/e2e/test_vap.py)."""
from __future__ import annotations

from tests.unit.helpers import GROUPJOB_TARGET, TRAINJOB_TARGET
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations
from webhook.vap.targets import export


def cfg(**extra):
    return config_mod.from_dict({"targets": [TRAINJOB_TARGET, GROUPJOB_TARGET], **extra})


def test_expressible_targets_and_the_reasons_for_the_rest():
    out = export(cfg())
    assert out.expressible == {"TrainJob.training.example.com"}
    assert any(line.startswith("GroupJob.jobs.example.com: groups[0]: its paths fan out") for line in out.left)
    assert any("composite" in line for line in out.left)
    policy, binding = out.objects
    assert policy["spec"]["matchConstraints"]["resourceRules"] == [{
        "apiGroups": ["training.example.com"], "apiVersions": ["*"], "resources": ["trainjobs"],
        "operations": ["CREATE", "UPDATE"]}]
    assert policy["spec"]["failurePolicy"] == "Fail" and binding["spec"]["validationActions"] == ["Deny"]
    assert all(v["reason"] == "Invalid" and v["messageExpression"] for v in policy["spec"]["validations"])
    assert any("(DIS-2)" in v["messageExpression"] for v in policy["spec"]["validations"])


def test_relaxed_rules_get_their_own_policy_and_binding_action():
    out = export(cfg(enforcement={"rules": {"DIS-2": "warn", "POL-3": "audit"}}))
    actions = {o["metadata"]["name"]: o["spec"]["validationActions"] for o in out.objects
               if o["kind"] == "ValidatingAdmissionPolicyBinding"}
    assert actions == {"workload-webhook-trainjobs.training.example.com": ["Deny"],
                       "workload-webhook-trainjobs.training.example.com-warn": ["Warn"],
                       "workload-webhook-trainjobs.training.example.com-audit": ["Audit"]}


def test_replace_stops_validating_the_exported_kinds_only():
    def rules(c):
        docs = configurations(c, Endpoint(b"x", url="https://127.0.0.1:1"))
        hooks = next(d for d in docs if d["kind"] == "ValidatingWebhookConfiguration")["webhooks"]
        return {r["resources"][0] for h in hooks if h["name"].startswith("targets.") for r in h["rules"]}, docs
    alongside, docs = rules(cfg(vap={"enabled": True, "mode": "alongside"}))
    replaced, docs2 = rules(cfg(vap={"enabled": True, "mode": "replace"}))
    assert alongside == {"trainjobs", "groupjobs"} and replaced == {"groupjobs"}
    assert sum(d["kind"] == "ValidatingAdmissionPolicy" for d in docs2) == 2      # Pod membership + TrainJob
    off, docs3 = rules(cfg())
    assert sum(d["kind"] == "ValidatingAdmissionPolicy" for d in docs3) == 1
