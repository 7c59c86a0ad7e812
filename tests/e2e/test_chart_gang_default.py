"""The chart with `config.gangByDefault` (DEF-2), rendered by the real helm: the Job creates
(and a named target that DEF-1 does not already send) of the selected namespaces registered
for /mutate exactly as the service's own configurations() says them, the selector ANDed
with the chart's exclusions, and `batch` among the groups the registration policy lets the
release's ServiceAccount register. Off, nothing of it is rendered."""
from __future__ import annotations

import yaml

from tests.e2e.test_chart_targets import GROUPS, URL, _essence, _render
from tests.e2e.test_chart import CHART, FULLNAME, NS, RELEASE, helm, values_file
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations

GANG = {"enabled": True, "targets": ["TrainJob.training.example.com"],
        "namespaceSelector": {"matchLabels": {"gang": "on"}, "matchExpressions": [{"key": "team", "operator": "Exists"}]}}
CONFIG = {"targets": [{"group": "training.example.com", "kind": "TrainJob",
                       "groups": [{**GROUPS[0], "defaultMinCount": False}]}],
          "gangByDefault": GANG}


def _hooks(docs, kind):
    return next(d for d in docs if d["kind"] == kind)["webhooks"]


def test_DEF_2_the_chart_registers_what_webhook_configs_prints(cluster, tmp_path):
    docs = [d for d in yaml.safe_load_all(_render(cluster, tmp_path, CONFIG).stdout) if d]
    ours = configurations(config_mod.from_dict(CONFIG), Endpoint(b"x", url=URL), name=FULLNAME, namespace=NS)
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        assert [_essence(h) for h in _hooks(docs, kind)] == [_essence(h) for h in _hooks(ours, kind)], kind
    names = [h["name"] for h in _hooks(docs, "MutatingWebhookConfiguration")]
    assert names == ["jobs.gang.mutate.workload-webhook.k8s.io", "targets.gang.mutate.workload-webhook.k8s.io",
                     "pods.mutate.workload-webhook.k8s.io"]

    off = [d for d in yaml.safe_load_all(_render(cluster, tmp_path, {**CONFIG, "gangByDefault": {}}).stdout) if d]
    assert [h["name"] for h in _hooks(off, "MutatingWebhookConfiguration")] == ["pods.mutate.workload-webhook.k8s.io"]


def test_DEF_2_the_registration_policy_lets_the_release_register_jobs(cluster, tmp_path):
    vals = values_file(tmp_path, config=CONFIG)
    out = helm(cluster, "template", RELEASE, CHART, "-n", NS, "-f", vals).stdout       # Service mode
    policy = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "ValidatingAdmissionPolicy"
                  and d["metadata"]["name"].endswith("-registration"))
    groups = next(v for v in policy["spec"]["variables"] if v["name"] == "groups")["expression"]
    assert '"batch"' in groups
    cm = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "ConfigMap" and "webhooks.yaml" in d["data"])
    registered = [h["name"] for d in yaml.safe_load_all(cm["data"]["webhooks.yaml"]) if d for h in d["webhooks"]]
    assert "jobs.gang.mutate.workload-webhook.k8s.io" in registered
