"""The chart's webhook rules for targets, rendered by the real helm: a target's resource
follows the same rule as `webhook-configs` offline (its `plural`, else the lowercase kind
+ "s" only where no pluralisation could differ, else the chart refuses to render), no
status subresource, `webhook.failurePolicy` on the object validations, and /mutate only
for the targets it can change, exactly as the service's own configurations() says them.
(Service mode registers what the chart renders into its ConfigMap: the same template.)"""
from __future__ import annotations

import pytest
import yaml

from tests.e2e.test_chart import CHART, FULLNAME, NS, RELEASE, helm, values_file
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations
from webhook.targets import obvious_plural

URL = "https://127.0.0.1:9443"
GROUPS = [{"schedulingPolicy": "spec.scheduling.schedulingPolicy", "size": "spec.replicas"}]
KINDS = ["TrainJob", "JobSet", "MPIJob", "InferenceService", "ResourceQuota", "Queue", "Workflow",
         "TrainingPolicy", "GangClass", "Gateway", "Mailbox", "Batch", "Mesh", "Quiz", "Hero", "Leaf", "Knife",
         "Datum", "Alumni", "Salesperson", "Foreman", "Metadata", "Sheep", "Aircraft", "Software", "ClusterIP",
         "ConfigV2", "T"]


def _render(cluster, tmp_path, config: dict, *extra: str, check: bool = True):
    vals = values_file(tmp_path, config=config)
    return helm(cluster, "template", RELEASE, CHART, "-n", NS, "-f", vals, "--set", f"webhook.url={URL}", *extra,
                check=check)


@pytest.mark.parametrize("kind", KINDS)
def test_the_chart_pluralises_a_kind_exactly_as_the_service_does(cluster, tmp_path, kind):
    proc = _render(cluster, tmp_path, {"targets": [{"group": "x.example.com", "kind": kind, "groups": GROUPS}]},
                   check=False)
    expected = obvious_plural(kind)
    if expected is None:
        assert proc.returncode != 0 and f"config.targets: {kind}.x.example.com: give `plural`" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    hooks = [h for d in yaml.safe_load_all(proc.stdout) if d and d["kind"].endswith("WebhookConfiguration")
             for h in d["webhooks"] if h["name"].startswith("targets.")]
    assert len(hooks) == 2 and all(h["rules"][0]["resources"] == [expected] for h in hooks)


def test_the_audit_may_list_a_target_by_the_resource_it_is_registered_as(cluster, tmp_path):
    target = {"group": "x.example.com", "kind": "TrainingPolicy", "plural": "trainingpolicies", "groups": GROUPS}
    proc = _render(cluster, tmp_path, {"targets": [target]}, "--set", "audit.enabled=true")
    role = next(d for d in yaml.safe_load_all(proc.stdout) if d and d["kind"] == "ClusterRole"
                and d["metadata"]["name"].endswith("-audit"))
    assert {"apiGroups": ["x.example.com"], "resources": ["trainingpolicies"], "verbs": ["get", "list", "watch"]} \
        in role["rules"]
    unnamed = {k: v for k, v in target.items() if k != "plural"}
    proc = _render(cluster, tmp_path, {"targets": [unnamed]}, "--set", "audit.enabled=true", check=False)
    assert proc.returncode != 0 and "give `plural`" in proc.stderr      # never `trainingpolicys`


def test_the_chart_registers_what_webhook_configs_prints(cluster, tmp_path):
    config = {"targets": [{"group": "training.example.com", "kind": "TrainJob", "groups": GROUPS},
                          {"group": "policy.example.com", "kind": "TrainingPolicy", "plural": "trainingpolicies",
                           "groups": [{**GROUPS[0], "defaultMinCount": False}]}],
              "profiles": ["jobset", "leaderworkerset",
                           {"name": "job-template", "group": "example.com", "kind": "CronTrainJob",
                            "jobSpec": "spec.jobTemplate.spec"}],
              "pods": {"validation": "webhook"}}
    for policy in ("Fail", "Ignore"):
        out = _render(cluster, tmp_path, config, "--set", f"webhook.failurePolicy={policy}",
                      "--set", "webhook.podFailurePolicy=Ignore").stdout
        chart = {d["kind"]: d for d in yaml.safe_load_all(out) if d and d["kind"].endswith("WebhookConfiguration")}
        ours = configurations(config_mod.from_dict(config), Endpoint(b"x", url=URL), name=FULLNAME, namespace=NS,
                              failure_policy=policy, pod_failure_policy="Ignore")
        for doc in ours[:2]:
            assert [_essence(h) for h in chart[doc["kind"]]["webhooks"]] == [_essence(h) for h in doc["webhooks"]]
        hooks = {h["name"]: h for d in chart.values() for h in d["webhooks"]}
        assert hooks["scheduling.validate.workload-webhook.k8s.io"]["failurePolicy"] == policy
        assert hooks["targets.validate.workload-webhook.k8s.io"]["failurePolicy"] == policy
        assert hooks["targets.mutate.workload-webhook.k8s.io"]["failurePolicy"] == "Fail"
        assert [r["resources"] for r in hooks["targets.mutate.workload-webhook.k8s.io"]["rules"]] == [["trainjobs"]]
        assert not [r for h in hooks.values() for rule in h["rules"] for r in rule["resources"] if "/" in r]


def _essence(hook: dict) -> dict:
    return {k: v for k, v in hook.items() if k != "clientConfig"} | {"url": hook["clientConfig"].get("url")}


def test_a_bad_failure_policy_is_refused(cluster, tmp_path):
    proc = _render(cluster, tmp_path, {}, "--set", "webhook.failurePolicy=Maybe", check=False)
    assert proc.returncode != 0 and "failurePolicy" in proc.stderr
