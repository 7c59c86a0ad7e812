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


# ---------------------------------------------------------------- replace is an allow-list

import dataclasses                                              # noqa: E402
import json                                                     # noqa: E402
import os                                                       # noqa: E402

from webhook.vap import expressible                             # noqa: E402

SCHEMA = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "schemas", "config.schema.json")))


def _target_settings(schema) -> set[str]:
    """Every setting a target entry can write, as webhook.targets.written_settings names them."""
    item = schema["properties"]["targets"]["items"]["properties"]
    out = {k for k in item if k not in ("groups", "composite", "checks")}
    group = item["groups"]["items"]["properties"]
    out |= {f"groups.{k}" for k in group}
    out |= {f"groups.size.{k}" for form in group["size"]["oneOf"] for k in (form.get("properties") or {})}
    out |= {f"{section}.{k}" for section in ("composite", "checks") for k in item[section]["properties"]}
    return out | {"profile"}         # what profiles.expand adds to the entries it makes


def test_every_target_setting_of_the_config_schema_is_classified():
    """A setting added to the schema and not classified fails here (and, meanwhile, keeps its
    target in the webhook): `mode: replace` never hands a rule to policies that do not state it."""
    assert _target_settings(SCHEMA) - set(expressible.TARGET_SETTINGS) == set()
    assert set(expressible.TARGET_SETTINGS) - _target_settings(SCHEMA) == set()      # nothing stale


def test_every_config_setting_target_rules_may_read_is_classified():
    sections = set(SCHEMA["properties"]) - expressible.UNREAD_SECTIONS
    assert sections == {"limits", "policies", "enforcement"}
    read = {f"{s}.{k}" for s in sections for k in SCHEMA["properties"][s]["properties"]}
    assert read == set(expressible.CONFIG_SETTINGS)
    left = {k for k, v in expressible.CONFIG_SETTINGS.items() if v not in (expressible.STATED, expressible.NEUTRAL)}
    assert left == set(expressible._IN_EFFECT)      # each setting left to the webhook says when it applies


def test_a_setting_nobody_classified_keeps_the_target_in_the_webhook():
    c = cfg()
    train = c.targets[0]
    assert expressible.reasons(train, c) == []
    future = dataclasses.replace(train, written=train.written | {"groups.someFutureRule"})
    out = export(dataclasses.replace(c, targets=(future,)))
    assert out.expressible == set() and out.objects == []
    assert out.left == ["TrainJob.training.example.com: groups.someFutureRule: not classified for the export "
                        "(webhook.vap.expressible)"]


def test_the_shipped_profiles_and_their_reasons():
    out = export(config_mod.from_dict({"profiles": ["jobset", "leaderworkerset"]}))
    assert out.expressible == set()
    assert "LeaderWorkerSet.leaderworkerset.x-k8s.io: gangIncompatible (TGT-10)" in out.left
    assert "JobSet.jobset.x-k8s.io: its size is a sum over a list" in out.left


def test_the_policy_matches_the_resource_that_serves_the_kind():
    c = config_mod.from_dict({"targets": [{**TRAINJOB_TARGET, "kind": "TrainingPolicy"}]})
    out = export(c, resources={"TrainingPolicy.training.example.com": "trainingpolicies"})
    policy = out.objects[0]
    assert policy["metadata"]["name"] == "workload-webhook-trainingpolicies.training.example.com"
    assert policy["spec"]["matchConstraints"]["resourceRules"][0]["resources"] == ["trainingpolicies"]
