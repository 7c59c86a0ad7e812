"""DEF-2, gang by default (webhook/mutation/gang_default.py, `gangByDefault`): which Jobs get
a gang at CREATE, what is never touched, that the patch only adds (a second call adds
nothing), that the defaulted Job passes kube-apiserver's rules (webhook/rules/job.py), the
namespace selector, the named targets, the config's problems, the webhook configuration,
and `workload-webhook mutate`. Proven with the real Job controller and kube-scheduler in
tests/e2e/test_gang_default.py."""
from __future__ import annotations

import copy
import json

import pytest
import yaml

from tests.unit.helpers import TRAINJOB_TARGET
from webhook import catalogue, engine
from webhook.cli import main
from webhook.view import ClusterUnavailable, DisabledView, StaticView
from webhook.config import ConfigError, from_dict
from webhook.mutation import gang_default, patch
from webhook.registration import Endpoint, configurations
from webhook.rules import job as job_rules

GATES = {"WorkloadWithJob": True}
SELECTOR = {"matchLabels": {"gang": "on"}}


def cfg(**gang) -> object:
    return from_dict({"featureGates": GATES, "gangByDefault": {"enabled": True, **gang},
                      "targets": [TRAINJOB_TARGET]})


ON = cfg()
POD = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}


def job(parallelism=3, completions=None, scheduling=None, namespace="ml", **meta) -> dict:
    spec = {"template": copy.deepcopy(POD)}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": namespace, **meta},
            "spec": spec}


def namespace(name="ml", **labels) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def mutate(obj, c=ON, view=None):
    return engine.mutate(engine.Request.for_object(obj), c, view or DisabledView())


def defaulted(obj, c=ON, view=None) -> dict:
    out = mutate(obj, c, view)
    assert out.allowed, out.errors
    return patch.apply(obj, out.patch or [])


# --------------------------------------------------------------------------- which Jobs


def test_DEF_2_a_job_of_three_gets_a_gang_of_three_and_the_mode():
    out = mutate(job(3))
    assert out.patch == [{"op": "add", "path": "/spec/scheduling", "value": {
        "schedulingPolicy": {"gang": {"minCount": 3}}, "disruptionMode": {"single": {}}}}]
    assert out.warnings == []


def test_DEF_2_the_configured_disruption_mode_is_written():
    assert defaulted(job(4), cfg(disruptionMode="all"))["spec"]["scheduling"] == {
        "schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"all": {}}}


@pytest.mark.parametrize("parallelism,completions,size", [(3, None, 3), (3, 3, 3), (3, 10, 3), (5, 3, 3)],
                         ids=["work-queue", "all-at-once", "waves", "fewer-completions"])
def test_DEF_2_min_count_is_parallelism_or_completions_when_fewer(parallelism, completions, size):
    assert defaulted(job(parallelism, completions))["spec"]["scheduling"]["schedulingPolicy"] == {
        "gang": {"minCount": size}}


@pytest.mark.parametrize("obj", [
    job(1), job(None), job(0), job(3, completions=1), job(True),
    job(3, ownerReferences=[{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "u",
                             "controller": True}]),
], ids=["parallelism-1", "parallelism-unset", "parallelism-0", "completions-1", "not-a-number", "controller-owner"])
def test_DEF_2_a_job_that_is_not_a_gang_of_several_is_left_alone(obj):
    out = mutate(obj)
    assert out.allowed and out.patch is None and out.warnings == []


def test_DEF_2_a_non_controller_owner_does_not_stop_it():
    obj = job(3, ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}])
    assert defaulted(obj)["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] == 3


def test_DEF_2_a_pod_template_with_a_group_of_its_own_is_left_alone():
    obj = job(3)
    obj["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    assert mutate(obj).patch is None


@pytest.mark.parametrize("scheduling", [
    {"schedulingPolicy": {"basic": {}}},
    {"schedulingPolicy": {"gang": {"minCount": 2}}},
    {"schedulingPolicy": {"gang": {}}},
    {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]},
    {"disruptionMode": {"all": {}}, "schedulingPolicy": {"gang": {"minCount": 3}}},
    {},
], ids=["basic-opt-out", "gang-2", "gang-unset-min", "claims-only", "all-mode", "empty"])
def test_DEF_2_what_the_user_set_is_never_touched(scheduling):
    obj = job(3, scheduling=scheduling)
    out = mutate(obj)
    assert out.patch is None and out.warnings == []


def test_DEF_2_the_patch_only_adds_and_a_second_call_adds_nothing():
    obj = job(3)
    original = copy.deepcopy(obj)
    first = mutate(obj)
    assert obj == original                                              # the object itself is never changed
    assert [op["op"] for op in first.patch] == ["add"]
    once = patch.apply(obj, first.patch)
    assert {k: v for k, v in once["spec"].items() if k != "scheduling"} == original["spec"]
    assert mutate(once).patch is None


@pytest.mark.parametrize("parallelism,completions", [(2, None), (3, 3), (5, 3), (8, 100), (2147483647, None)])
@pytest.mark.parametrize("mode", ["single", "all"])
def test_DEF_2_the_defaulted_job_passes_the_api_servers_rules(parallelism, completions, mode):
    c = cfg(disruptionMode=mode)
    out = defaulted(job(parallelism, completions), c)
    assert "scheduling" in out["spec"]
    assert job_rules.validate_job(out, None, c).errors == []
    assert engine.validate(engine.Request.for_object(out), c, scope="cli").errors == []


def test_DEF_2_gate_off_admits_unchanged_and_says_why():
    off = from_dict({"gangByDefault": {"enabled": True}})
    out = mutate(job(3), off)
    assert out.allowed and out.patch is None
    assert out.warnings == ["spec.scheduling: no gang added: the feature gate WorkloadWithJob is off, and "
                            "kube-apiserver would refuse the field (DEF-2)"]


def test_DEF_2_a_size_above_max_min_count_is_left_alone_with_a_warning():
    c = from_dict({"featureGates": GATES, "gangByDefault": {"enabled": True}, "limits": {"maxMinCount": 4}})
    assert defaulted(job(4), c)["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] == 4
    out = mutate(job(5), c)
    assert out.patch is None and "above limits.maxMinCount (4)" in out.warnings[0]


def test_DEF_2_a_default_the_api_server_would_refuse_is_not_added(monkeypatch):
    """Belt and braces: whatever the API server's rules refuse on the defaulted Job drops the gang."""
    monkeypatch.setattr(gang_default, "scheduling", lambda size, mode: {"schedulingPolicy": {"gang": {
        "minCount": size + 1}}})
    out = mutate(job(3))
    assert out.patch is None
    assert "must not be greater than parallelism (3)" in out.warnings[0] and out.warnings[0].endswith("(DEF-2)")


def test_DEF_2_off_by_default_and_jobs_false_leave_jobs_to_validation():
    assert engine.mutate(engine.Request.for_object(job(3)), from_dict({"featureGates": GATES})).checked is False
    assert mutate(job(3), cfg(jobs=False)).patch is None
    assert mutate(job(3, scheduling={"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})).allowed


def test_DEF_2_only_create_is_mutated():
    req = engine.Request("UPDATE", "batch", "v1", "Job", job(3), job(3), "ml")
    assert engine.mutate(req, ON).patch is None


def test_DEF_2_is_a_mutation_in_the_catalogue():
    rule = next(r for r in catalogue.RULES if r.id == "DEF-2")
    assert not rule.own and not rule.violates and "DEF-2" in catalogue.IDS


# --------------------------------------------------------------------------- the namespace


def test_DEF_2_a_namespace_not_selected_is_left_alone():
    c = cfg(namespaceSelector=SELECTOR)
    assert mutate(job(3), c, StaticView([namespace(gang="off")])).patch is None
    assert mutate(job(3), c, StaticView([namespace()])).patch is None
    assert defaulted(job(3), c, StaticView([namespace(gang="on")]))["spec"]["scheduling"]


@pytest.mark.parametrize("expressions,selected", [
    ([{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml"]}], True),
    ([{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["ml"]}], False),
    ([{"key": "team", "operator": "Exists"}], True),
    ([{"key": "team", "operator": "DoesNotExist"}], False),
    ([{"key": "team", "operator": "In", "values": ["research", "infra"]}], True),
])
def test_DEF_2_match_expressions_and_the_namespaces_own_name(expressions, selected):
    c = cfg(namespaceSelector={"matchExpressions": expressions})
    out = mutate(job(3), c, StaticView([namespace(team="research")]))
    assert (out.patch is not None) == selected


def test_DEF_2_unknown_labels_default_as_the_registration_chose_with_a_warning():
    c = cfg(namespaceSelector=SELECTOR)
    out = mutate(job(3), c, DisabledView())
    assert out.patch is not None
    assert out.warnings == ["gangByDefault: the labels of namespace 'ml' are unknown; defaulted as if the "
                            "namespaceSelector selected it (DEF-2)"]

    class Down(DisabledView):
        disabled = False

        def namespace_labels(self, name):
            raise ClusterUnavailable("API server answered 503 Service Unavailable")
    out = mutate(job(3), c, Down())
    assert out.patch is not None and "are not read (API server answered 503" in out.warnings[0]


def test_DEF_2_no_selector_asks_no_labels():
    class Asked(DisabledView):
        def namespace_labels(self, name):
            raise AssertionError("looked up")
    assert mutate(job(3), ON, Asked()).patch is not None


# --------------------------------------------------------------------------- targets


def trainjob(replicas=4, scheduling=None) -> dict:
    spec = {"replicas": replicas}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {"apiVersion": "training.example.com/v1", "kind": "TrainJob", "metadata": {"name": "t", "namespace": "ml"},
            "spec": spec}


TRAIN = "TrainJob.training.example.com"


def test_DEF_2_a_named_targets_group_without_a_policy_gets_a_gang_of_its_size():
    c = cfg(targets=[TRAIN])
    out = defaulted(trainjob(4), c)
    assert out["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {"minCount": 4}},
                                         "disruptionMode": {"single": {}}}
    assert mutate(out, c).patch is None                                        # idempotent
    assert engine.validate(engine.Request.for_object(out), c).errors == []


@pytest.mark.parametrize("obj", [trainjob(1), trainjob(4, {"schedulingPolicy": {"basic": {}}}),
                                 trainjob(4, {"schedulingPolicy": {"gang": {"minCount": 2}}})],
                         ids=["size-1", "basic", "gang-set"])
def test_DEF_2_a_targets_group_with_a_policy_or_of_one_is_left_alone(obj):
    assert mutate(obj, cfg(targets=[TRAIN])).patch is None


def test_DEF_2_a_target_not_named_keeps_only_DEF_1():
    assert mutate(trainjob(4), ON).patch is None
    out = mutate(trainjob(4, {"schedulingPolicy": {"gang": {}}}), ON)          # DEF-1 as before
    assert out.patch == [{"op": "add", "path": "/spec/scheduling/schedulingPolicy/gang/minCount", "value": 4}]


def test_DEF_2_a_targets_user_mode_is_kept():
    out = defaulted(trainjob(3, {"disruptionMode": {"all": {}}}), cfg(targets=[TRAIN]))
    assert out["spec"]["scheduling"] == {"disruptionMode": {"all": {}}, "schedulingPolicy": {"gang": {"minCount": 3}}}


# --------------------------------------------------------------------------- config and registration


@pytest.mark.parametrize("raw,problem", [
    ({"targets": ["Nope.example.com"]}, "gangByDefault.targets[0]: Invalid value: \"Nope.example.com\": names no "
                                        "configured target"),
    ({"disruptionMode": "both"}, "gangByDefault.disruptionMode"),
    ({"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     "gangByDefault.namespaceSelector.matchExpressions[0]: Invalid value: \"In\": In and NotIn need values"),
    ({"namespaceSelector": {"matchLabels": {"Bad Key": "x"}}}, "gangByDefault.namespaceSelector: Invalid value: "
                                                               "\"Bad Key\": label key"),
    ({"enabled": "yes"}, "gangByDefault.enabled"),
])
def test_DEF_2_config_problems_name_their_path(raw, problem):
    with pytest.raises(ConfigError) as exc:
        from_dict({"gangByDefault": raw, "targets": [TRAINJOB_TARGET]})
    assert any(p.startswith(problem) for p in exc.value.problems), exc.value.problems


def test_DEF_2_defaults_are_off():
    g = from_dict({}).gangByDefault
    assert (g.enabled, g.disruptionMode, g.jobs, g.targets, g.for_jobs) == (False, "single", True, (), False)


ENDPOINT = Endpoint(b"ca", url="https://127.0.0.1:9443")


def _mutating(c) -> dict:
    docs = configurations(c, ENDPOINT)
    return {h["name"]: h for h in next(d for d in docs if d["kind"] == "MutatingWebhookConfiguration")["webhooks"]}


def test_DEF_2_jobs_are_registered_only_when_on_create_only_scoped_by_the_selector():
    assert "jobs.gang.mutate.workload-webhook.k8s.io" not in _mutating(from_dict({}))
    assert not any("batch" in r["apiGroups"] for h in _mutating(from_dict({})).values() for r in h["rules"])
    hook = _mutating(cfg(namespaceSelector={**SELECTOR, "matchExpressions": [
        {"key": "team", "operator": "Exists"}]}))["jobs.gang.mutate.workload-webhook.k8s.io"]
    assert hook["rules"] == [{"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"],
                              "operations": ["CREATE"], "scope": "Namespaced"}]
    assert hook["namespaceSelector"] == {"matchLabels": {"gang": "on"}, "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "workload-webhook"]},
        {"key": "team", "operator": "Exists"}]}
    assert [m["name"] for m in hook["matchConditions"]] == ["no-scheduling", "several-pods", "no-controller-owner",
                                                            "no-pod-group"]
    assert "jobs.gang.mutate.workload-webhook.k8s.io" not in _mutating(cfg(jobs=False))


def test_DEF_2_named_targets_are_registered_once():
    hooks = _mutating(cfg(targets=[TRAIN]))
    # TrainJob defaults minCount (DEF-1): targets.mutate already sends it, and DEF-2 runs in that call.
    assert "targets.gang.mutate.workload-webhook.k8s.io" not in hooks
    quiet = {**TRAINJOB_TARGET, "groups": [{**TRAINJOB_TARGET["groups"][0], "defaultMinCount": False}]}
    c = from_dict({"gangByDefault": {"enabled": True, "targets": [TRAIN], "namespaceSelector": SELECTOR},
                   "targets": [quiet]})
    hook = _mutating(c)["targets.gang.mutate.workload-webhook.k8s.io"]
    assert hook["rules"][0]["apiGroups"] == ["training.example.com"] and hook["rules"][0]["operations"] == ["CREATE"]
    assert hook["namespaceSelector"]["matchLabels"] == {"gang": "on"}


# --------------------------------------------------------------------------- the command line


def test_DEF_2_workload_webhook_mutate_shows_the_stored_job(tmp_path, capsys):
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job(3, completions=3)))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"featureGates": GATES, "gangByDefault": {
        "enabled": True, "namespaceSelector": SELECTOR}}))
    (tmp_path / "ns.yaml").write_text(yaml.safe_dump(namespace(gang="on")))
    args = ["mutate", "-f", str(tmp_path / "job.yaml"), "--config", str(tmp_path / "c.yaml")]
    assert main([*args, "--context", str(tmp_path / "ns.yaml")]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    assert out["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {"minCount": 3}},
                                         "disruptionMode": {"single": {}}}
    (tmp_path / "ns.yaml").write_text(yaml.safe_dump(namespace(gang="off")))
    assert main([*args, "--context", str(tmp_path / "ns.yaml"), "-o", "patch"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_DEF_2_a_targets_gang_its_rules_would_refuse_is_not_added():
    """A gang the target forbids while a field holds a value (TGT-10): nothing added, a warning says why."""
    target = {**TRAINJOB_TARGET, "groups": [{**TRAINJOB_TARGET["groups"][0], "gangIncompatible": [
        {"path": "spec.startupPolicy", "equals": "LeaderReady"}]}]}
    c = from_dict({"gangByDefault": {"enabled": True, "targets": [TRAIN]}, "targets": [target]})
    obj = trainjob(4)
    obj["spec"]["startupPolicy"] = "LeaderReady"
    out = mutate(obj, c)
    assert out.patch is None and len(out.warnings) == 1
    assert out.warnings[0].startswith("no gang added: the target's rules would refuse it: spec.scheduling."
                                      "schedulingPolicy") and out.warnings[0].endswith("(DEF-2)")
    obj["spec"]["startupPolicy"] = "LeaderCreated"
    assert defaulted(obj, c)["spec"]["scheduling"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
