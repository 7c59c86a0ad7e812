"""`workload-webhook audit` on the real API server judges with the cluster's feature
gates (every Workload-Aware Scheduling gate on here) although its config leaves them at
the defaults: a PodGroup kube-apiserver stored with a defaulted `preemptionPolicy` and a
Job with `spec.scheduling` are not violations; a Deployment whose pod template's group
label breaks POD-1 is, at the template's path. An account that may list but not read
/metrics gets the config's gates, and the output says so."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.e2e.rest import token_kubeconfig
from tests.server.harness import REPO
from tests.unit.helpers import podgroup

NS = "audit-gates"
LABEL = "scheduling.k8s.io/pod-group"
CONTAINERS = [{"name": "c", "image": "busybox"}]


def deployment(name: str, group: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name, LABEL: group}}, "spec": {"containers": CONTAINERS}}}}


JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "gang", "namespace": NS},
       "spec": {"suspend": True, "parallelism": 2, "completions": 2,
                "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}}},
                "template": {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}}}


@pytest.fixture(scope="module")
def stored(kubectl, cluster):
    assert cluster.feature_gates.get("PodGroupPreemptionPolicy") and cluster.feature_gates.get("WorkloadWithJob")
    kubectl("create", "namespace", NS, check=False)
    pg = podgroup("pg", schedulingPolicy={"gang": {"minCount": 2}}, disruptionMode={"single": {}})
    pg["metadata"]["namespace"] = NS
    kubectl("create", "-f", "-", stdin=yaml.safe_dump_all([pg, JOB, deployment("good", "train"),
                                                           deployment("bad", "Not_A_Name")]))
    got = json.loads(kubectl("get", "podgroup", "pg", "-n", NS, "-o", "json").stdout)
    assert got["spec"].get("preemptionPolicy"), "the API server did not default preemptionPolicy"
    return kubectl


def audit(kubeconfig: str, tmp_path) -> tuple[dict, str]:
    config = tmp_path / "config.yaml"
    config.write_text("{}\n")                         # the defaults: PodGroupPreemptionPolicy, WorkloadWithJob off
    proc = subprocess.run([sys.executable, "-m", "webhook", "audit", "--config", str(config), "--kubeconfig",
                           kubeconfig, "--fail-on", "never", "-o", "json"], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def violations(out: dict) -> dict[tuple[str, str], list[str]]:
    return {(v["kind"], v["name"]): [f"{e['field']}: {e['rule']}" for e in v["errors"]]
            for v in out["violations"] if v["namespace"] == NS}


def test_the_audit_judges_with_the_clusters_gates(stored, cluster, tmp_path):
    out, err = audit(cluster.kubeconfig("admin"), tmp_path)
    line = next(x for x in err.splitlines() if x.startswith("feature gates"))
    assert line.startswith("feature gates from the API server: ")
    assert "PodGroupPreemptionPolicy=on" in line and "WorkloadWithJob=on" in line, line
    assert violations(out) == {("Deployment", "bad"): [f"spec.template.metadata.labels[{LABEL}]: POD-1"]}


def test_without_metrics_the_configs_gates_judge_and_the_output_says_so(stored, cluster, kubectl, tmp_path):
    account = "audit-no-metrics"
    kubectl("create", "serviceaccount", account, "-n", NS, check=False)
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": account},
         "rules": [{"apiGroups": ["scheduling.k8s.io", "apps", "batch"], "resources": ["*"], "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": account},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": account},
         "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": NS}]}]))
    kubeconfig = token_kubeconfig(cluster, kubectl, account, NS, tmp_path / "sa.kubeconfig")
    out, err = audit(kubeconfig, tmp_path)
    line = next(x for x in err.splitlines() if x.startswith("feature gates"))
    assert line.startswith("feature gates from the config, not the cluster") and "403" in line, line
    found = violations(out)
    assert found[("PodGroup", "pg")] == ["spec.preemptionPolicy: None"]
    assert found[("Job", "gang")] == ["spec.scheduling: None"]
