"""Enforcement actions (deny / warn / audit) as data: the engine's verdict
partitioned by rule id, target kind, namespace labels and scope; the admission
answer it becomes; the CLI's --fail-on."""
from __future__ import annotations

import base64

import pytest

from tests.unit.helpers import config, trainjob
from webhook import config as config_mod
from webhook import engine
from webhook.admission import review
from webhook.cli import main
from webhook.view import StaticView

BAD = trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})            # DIS-2 only
WORSE = trainjob({"schedulingPolicy": {"gang": {"minCount": 9}}, "disruptionMode": {"single": {}, "all": {}}},
                 replicas=4)                                                                  # POL-3 + DIS-1 (mirror)
OVER = trainjob({"schedulingPolicy": {"gang": {"minCount": 9}}}, replicas=4)                 # POL-3 only


def judge(obj, enforcement, view=None, scope="admission"):
    return engine.validate(engine.Request.for_object(obj), config(enforcement=enforcement), view, scope)


def test_default_deny_is_today():
    v = judge(BAD, {})
    assert not v.allowed and v.action == "deny" and v.errors[0].rule == "DIS-2"


@pytest.mark.parametrize("action", ["warn", "audit"])
def test_a_rule_can_be_relaxed(action):
    v = judge(BAD, {"rules": {"DIS-2": action}})
    assert v.allowed and v.action == action
    assert [e.rule for e in (v.warned if action == "warn" else v.audits)] == ["DIS-2"]


def test_mirror_rules_always_deny_and_the_strictest_action_wins():
    v = judge(WORSE, {"default": "audit"})
    assert not v.allowed and {e.rule for e in v.errors} == {None}        # DIS-1 mirrors the API server
    assert [e.rule for e in v.audits] == ["POL-3"]


def test_target_namespace_and_precedence():
    assert judge(OVER, {"targets": {"TrainJob": "warn"}}).action == "warn"
    assert judge(OVER, {"targets": {"TrainJob": "warn"}, "rules": {"POL-3": "audit"}}).action == "audit"
    ns = StaticView([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"team": "research"}}}])
    enf = {"rules": {"POL-3": "warn"}, "namespaces": [{"selector": {"matchLabels": {"team": "research"}}, "action": "audit"}]}
    assert judge(OVER, enf, ns).action == "audit"
    other = StaticView([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"team": "prod"}}}])
    assert judge(OVER, enf, other).action == "warn"
    assert judge(OVER, enf, None).action == "warn"           # labels unknown: the namespace entries do not apply
    expr = {"namespaces": [{"selector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["research"]}]},
                            "action": "warn"}]}
    assert judge(OVER, expr, ns).action == "warn" and judge(OVER, expr, other).action == "deny"


def test_scopes_limit_an_override():
    enf = {"rules": {"DIS-2": {"action": "warn", "scopes": ["admission"]}}}
    assert judge(BAD, enf, scope="admission").action == "warn"
    assert judge(BAD, enf, scope="cli").action == "deny"


def test_the_admission_answer_carries_warnings_and_the_audit_annotation():
    warned = review.respond("u", judge(BAD, {"rules": {"DIS-2": "warn"}}))["response"]
    assert warned["allowed"] and warned["warnings"][0].startswith("spec.scheduling.disruptionMode: Invalid value")
    assert warned["warnings"][0].endswith("(DIS-2)") and "auditAnnotations" not in warned
    audited = review.respond("u", judge(BAD, {"rules": {"DIS-2": "audit"}}))["response"]
    assert audited["allowed"] and "warnings" not in audited
    assert '"rule": "DIS-2"' in audited["auditAnnotations"]["violations"]
    assert "patch" not in audited or base64.b64decode(audited["patch"])


def test_unknown_rule_ids_and_actions_are_config_errors():
    with pytest.raises(config_mod.ConfigError, match="POL-1"):
        config(enforcement={"rules": {"POL-1": "warn"}})
    with pytest.raises(config_mod.ConfigError, match="enforcement"):
        config(enforcement={"default": "ignore"})


def test_validate_fail_on(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("enforcement: {rules: {DIS-2: warn, POL-3: audit}}\n"
                   "targets: [{group: training.example.com, kind: TrainJob, groups: [{at: spec.scheduling, size: spec.replicas}]}]\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(__import__("yaml").safe_dump(BAD))
    over = tmp_path / "over.yaml"
    over.write_text(__import__("yaml").safe_dump(OVER))
    assert main(["validate", "-f", str(bad), "--config", str(cfg)]) == 0
    assert "Warning: spec.scheduling.disruptionMode" in capsys.readouterr().out
    assert main(["validate", "-f", str(bad), "--config", str(cfg), "--fail-on", "warn"]) == 1
    assert main(["validate", "-f", str(over), "--config", str(cfg), "--fail-on", "warn"]) == 0
    assert main(["validate", "-f", str(over), "--config", str(cfg), "--fail-on", "audit"]) == 1
    assert "Audit: spec.scheduling.schedulingPolicy.gang.minCount" in capsys.readouterr().out


def test_relaxed_pod_rules_still_join_the_group():
    """POD-5 (deny mode) relaxed to warn: the Pod is admitted AND joins its group (no silent gang exit)."""
    from tests.unit.helpers import pod
    cfg = config(pods={"onMissingPodGroup": "deny"}, enforcement={"rules": {"POD-5": "warn"}})
    v = engine.mutate(engine.Request.for_object(pod({"scheduling.k8s.io/pod-group": "grp"})), cfg,
                      StaticView([], authoritative=True))
    assert v.allowed and [e.rule for e in v.warned] == ["POD-5"]
    assert {"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": "grp"}} in v.patch
    denied = review.respond("u", engine.mutate(engine.Request.for_object(pod({"scheduling.k8s.io/pod-group": "grp"})),
                                               config(pods={"onMissingPodGroup": "deny"}), StaticView([], authoritative=True)))
    assert denied["response"]["allowed"] is False and "patch" not in denied["response"]


def test_namespace_labels_are_read_once_per_request():
    calls = []

    class Slow(StaticView):
        def namespace_labels(self, name):
            calls.append(name)
            raise __import__("webhook.view", fromlist=["x"]).ClusterUnavailable("timeout")
    many = trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})
    v = judge(many, {"namespaces": [{"selector": {"matchLabels": {"a": "b"}}, "action": "audit"}], "rules": {"DIS-2": "warn"}},
              Slow([]))
    assert v.action == "warn" and len(calls) == 1


def test_the_audit_annotation_stays_json_when_cut():
    import json
    from webhook.enforcement import annotation
    errors = judge(OVER, {}).errors * 200
    text = annotation(errors, limit=2000)
    assert len(text) <= 2000 and isinstance(json.loads(text), list)


def test_the_pod_membership_policy_binding_follows_enforcement():
    from webhook.vap.pod_membership import binding_action
    assert binding_action(config()) == "Deny"
    assert binding_action(config(enforcement={"rules": {"POD-3": "warn"}})) == "Deny"     # POD-1 still denies
    assert binding_action(config(enforcement={"rules": {"POD-3": "warn", "POD-1": "audit"}})) == "Warn"
    assert binding_action(config(enforcement={"default": "audit", "rules": {"POD-1": "warn"}})) == "Warn"
    assert binding_action(config(enforcement={"default": "audit"})) == "Audit"
