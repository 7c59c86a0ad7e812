"""A target's resource by its kind (webhook.cluster.discovery): from what discovery
or the CRDs say is served, never guessed; and what stops the registrar (a target not
served, a rule that names what serves no target). The discovery requests themselves run
against the real API server (tests/e2e/test_target_discovery.py)."""
import pytest

from webhook import config as config_mod
from webhook.cluster.discovery import check_rules, from_crds, resolve
from webhook.registration import Endpoint, configurations
from webhook.targets import UnknownResource

POLICY = {"group": "policy.example.com", "kind": "TrainingPolicy", "versions": ["v1"],
          "groups": [{"schedulingPolicy": "spec.scheduling.schedulingPolicy"}]}
KEY = "TrainingPolicy.policy.example.com"


def crd(group="policy.example.com", kind="TrainingPolicy", plural="trainingpolicies", versions=(("v1", True),)):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "names": {"kind": kind, "plural": plural}, "scope": "Namespaced",
                     "versions": [{"name": v, "served": s, "storage": True} for v, s in versions]}}


def targets(*entries):
    return config_mod.from_dict({"targets": list(entries)}).targets


def test_the_crd_says_the_plural_of_an_irregular_kind():
    served = from_crds([crd(), {"kind": "ConfigMap"}, "not a document"])
    assert served == {("policy.example.com", "v1"): {"TrainingPolicy": "trainingpolicies"}}
    assert resolve(targets(POLICY), served) == {KEY: "trainingpolicies"}
    # ... and so the registration names it, not "trainingpolicys"
    docs = configurations(config_mod.from_dict({"targets": [POLICY]}), Endpoint(b"x", url="https://127.0.0.1:1"),
                          resources=resolve(targets(POLICY), served))
    rules = [r for d in docs[:2] for h in d["webhooks"] if h["name"].startswith("targets.") for r in h["rules"]]
    assert rules and all(r["resources"] == ["trainingpolicies"] for r in rules)


def test_a_version_that_is_not_served_serves_nothing():
    assert from_crds([crd(versions=(("v1", False), ("v2", True)))]) == {
        ("policy.example.com", "v2"): {"TrainingPolicy": "trainingpolicies"}}


def test_a_kind_not_served_has_no_resource_and_the_reason_names_it():
    with pytest.raises(UnknownResource) as err:
        resolve(targets(POLICY), {("policy.example.com", "v1"): {"Other": "others"}})
    assert err.value.problems == [f"{KEY}: not served: policy.example.com/{{v1}} serves no kind TrainingPolicy"]
    with pytest.raises(UnknownResource) as err:
        resolve(targets({k: v for k, v in POLICY.items() if k != "versions"}), {("policy.example.com", ""): None})
    assert err.value.problems == [f"{KEY}: not served: the API group policy.example.com is not served "
                                  "(is its CRD installed?)"]


def test_an_explicit_plural_must_be_what_serves_the_kind():
    with pytest.raises(UnknownResource) as err:
        resolve(targets({**POLICY, "plural": "trainingpolicys"}), from_crds([crd()]))
    assert err.value.problems == [f"{KEY}: plural 'trainingpolicys' is not what serves it: trainingpolicies"]


def test_offline_crds_cover_their_targets_and_the_config_the_rest():
    train = {"group": "training.example.com", "kind": "TrainJob", "groups": [{"schedulingPolicy": "spec.p"}]}
    gang = {"group": "gangs.example.com", "kind": "GangClass", "groups": [{"schedulingPolicy": "spec.p"}]}
    assert resolve(targets(POLICY, train), from_crds([crd()]), strict=False) == {
        KEY: "trainingpolicies", "TrainJob.training.example.com": "trainjobs"}
    with pytest.raises(UnknownResource) as err:
        resolve(targets(POLICY, gang), from_crds([crd()]), strict=False)
    assert [p.split(":")[0] for p in err.value.problems] == ["GangClass.gangs.example.com"]
    with pytest.raises(UnknownResource):                 # a cluster: every target must be served
        resolve(targets(POLICY, train), from_crds([crd()]))


def test_a_rule_that_names_what_serves_no_target_stops_the_registration():
    cfg = config_mod.from_dict({"targets": [{**POLICY, "plural": "trainingpolicys"}]})
    # The webhook configurations as the old default ("lowercase kind + s") wrote them.
    hooks = [h for d in configurations(cfg, Endpoint(b"x", url="https://127.0.0.1:1"))[:2] for h in d["webhooks"]]
    served = from_crds([crd()])
    right = targets(POLICY)
    problems = check_rules(hooks, right, served)
    assert problems and all(p.startswith("policy.example.com/trainingpolicys: a rule of targets.") for p in problems)
    assert "policy.example.com serves them as trainingpolicies" in problems[0]
    good = configurations(config_mod.from_dict({"targets": [POLICY]}), Endpoint(b"x", url="https://127.0.0.1:1"),
                          resources={KEY: "trainingpolicies"})
    assert check_rules([h for d in good[:2] for h in d["webhooks"]], right, served) == []
    assert check_rules([h for d in good[:2] for h in d["webhooks"]], right, {}) == [
        f"{KEY}: not served: policy.example.com/{{v1}} is not served (is its CRD installed?)"]


# ---------------------------------------------------------------- webhook-configs and vap

import yaml                                                      # noqa: E402

from webhook.cli import main                                     # noqa: E402


def _files(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"targets": [POLICY]}))
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd()))
    assert main(["certs", "generate", "--out", str(tmp_path / "pki")]) == 0
    return str(tmp_path / "config.yaml"), str(tmp_path / "crd.yaml"), str(tmp_path / "pki" / "ca.crt")


def test_webhook_configs_needs_plural_or_the_crd_for_an_irregular_kind(tmp_path, capsys):
    config, crd_file, ca = _files(tmp_path)
    capsys.readouterr()
    common = ["webhook-configs", "--config", config, "--ca-bundle", ca, "--url", "https://127.0.0.1:9443"]
    assert main(common) == 2
    out = capsys.readouterr()
    assert out.out == "" and f"error: {KEY}: give `plural`" in out.err
    assert main([*common, "--crd", crd_file, "--failure-policy", "Ignore"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    hooks = {h["name"]: h for d in docs[:2] for h in d["webhooks"]}
    assert hooks["targets.validate.workload-webhook.k8s.io"]["rules"][0]["resources"] == ["trainingpolicies"]
    assert hooks["targets.validate.workload-webhook.k8s.io"]["failurePolicy"] == "Ignore"
    assert hooks["targets.mutate.workload-webhook.k8s.io"]["failurePolicy"] == "Fail"


def test_vap_needs_plural_or_the_crd_for_an_irregular_kind(tmp_path, capsys):
    config, crd_file, _ = _files(tmp_path)
    capsys.readouterr()
    assert main(["vap", "--config", config]) == 2
    assert f"error: {KEY}: give `plural`" in capsys.readouterr().err
    assert main(["vap", "--config", config, "--crd", crd_file]) == 0
    policy = next(yaml.safe_load_all(capsys.readouterr().out))
    assert policy["spec"]["matchConstraints"]["resourceRules"][0]["resources"] == ["trainingpolicies"]
