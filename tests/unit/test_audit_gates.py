"""`audit` judges with the cluster's feature gates, read as `serve` reads them, and
the config's only when they cannot be read (and then says so); it lists the built-in
workloads with pod templates, judging a controlled ReplicaSet or Job through its
owner. The real cluster: tests/e2e/test_audit_gates.py, and the chart's audit CronJob
on a real node in tests/e2e/test_chart_node.py."""
from __future__ import annotations

from tests.unit.test_gates import Api
from webhook.audit.gates import audit_gates
from webhook.audit.lister import controlled_by, resources
from webhook.audit.runner import judge_all
from webhook.config import from_dict

ON = b'kubernetes_feature_enabled{name="PodGroupPreemptionPolicy",stage="ALPHA"} 1\n' \
     b'kubernetes_feature_enabled{name="CompositePodGroup",stage="ALPHA"} 0\n'


def stored_podgroup() -> dict:
    """As kube-apiserver stores a PodGroup with PodGroupPreemptionPolicy on: preemptionPolicy defaulted."""
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "ml", "uid": "u", "resourceVersion": "1"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"single": {}},
                     "preemptionPolicy": "PreemptLowerPriority"}}


def test_the_clusters_gates_judge_not_the_configs():
    """The issue: every PodGroup was reported `Forbidden: disabled by feature-gate PodGroupPreemptionPolicy`."""
    cfg = from_dict({})
    assert not cfg.gate("PodGroupPreemptionPolicy")
    judged, line = audit_gates(Api(body=ON), cfg)
    assert judged.gate("PodGroupPreemptionPolicy") and not judged.gate("CompositePodGroup")
    assert judged.gate("DRAWorkloadResourceClaims")          # not in the metric: on, as serve reads it
    assert line.startswith("feature gates from the API server: ") and "PodGroupPreemptionPolicy=on" in line
    assert judge_all([stored_podgroup()], judged, None, 10).violating == 0
    assert judge_all([stored_podgroup()], cfg, None, 10).violating == 1     # what the config's gates said


def test_unreadable_gates_fall_back_to_the_config_and_say_why():
    cfg = from_dict({"featureGates": {"PodGroupPreemptionPolicy": True}})
    for api, why in ((Api(status=403, body=b"forbidden"), "HTTP 403"), (Api(error=OSError("refused")), "refused"),
                     (Api(body=b"# nothing here\n"), "no kubernetes_feature_enabled")):
        judged, line = audit_gates(api, cfg)
        assert judged is cfg
        assert line.startswith("feature gates from the config, not the cluster") and why in line, line
        assert "PodGroupPreemptionPolicy=on" in line


def test_the_audit_lists_the_workloads_with_pod_templates_once():
    cfg = from_dict({"profiles": [{"name": "job-template", "group": "batch", "kind": "Job", "jobSpec": "spec"}]})
    listed = {(r.group, r.plural): r for r in resources(cfg)}
    assert [r.plural for r in resources(cfg)].count("jobs") == 1
    for group, plural in (("apps", "deployments"), ("apps", "statefulsets"), ("apps", "replicasets"),
                          ("apps", "daemonsets"), ("batch", "jobs"), ("batch", "cronjobs")):
        assert listed[(group, plural)].optional, plural
    assert listed[("apps", "replicasets")].owner == "Deployment" and listed[("batch", "jobs")].owner == "CronJob"
    assert not listed[("scheduling.k8s.io", "podgroups")].optional


def test_a_controlled_item_is_judged_through_its_owner():
    owned = {"metadata": {"ownerReferences": [{"kind": "Deployment", "name": "d", "controller": True}]}}
    assert controlled_by(owned, "Deployment") and not controlled_by(owned, "CronJob")
    assert not controlled_by({"metadata": {"ownerReferences": [{"kind": "Deployment", "name": "d"}]}}, "Deployment")
    assert not controlled_by({"metadata": {}}, "Deployment")
