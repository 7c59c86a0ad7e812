"""Safe rollout on a real API server: the same bad AuditJob (a copy of the
TrainJob CRD, so the session webhook leaves it alone) refused under `deny`,
admitted with kubectl printing the warning under `warn`, admitted with the
audit annotation under `audit` (read back from kube-apiserver's audit log);
then `workload-webhook audit --report` over 2,000 existing objects (300
violating) writes reports `kubectl get reports -A` shows with the right
counts, in bounded memory, and a second run after fixes updates them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from tests import memory
from tests.e2e import adopters
from tests.e2e.rest import token_kubeconfig
from tests.server.harness import REPO

GROUP, KIND, PLURAL = "audit.example.com", "AuditJob", "auditjobs"
REPORTS = os.path.normpath(os.path.join(REPO, "..", "shared", "reports"))
TARGET = {"group": GROUP, "kind": KIND, "versions": ["v1"], "groups": [{"at": "spec.scheduling", "size": "spec.replicas"}]}
NAMESPACES = ("rollout-a", "rollout-b", "rollout-c", "rollout-d")
BAD = {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}          # DIS-2
GOOD = {"schedulingPolicy": {"gang": {"minCount": 2}}}


def auditjob(name, namespace, scheduling, replicas=4):
    return {"apiVersion": f"{GROUP}/v1", "kind": KIND, "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "scheduling": scheduling}}


@pytest.fixture(scope="module")
def crd(kubectl):
    kubectl("apply", "-f", "-", stdin=adopters.trainjob_crd_copy(GROUP, KIND, PLURAL))
    for path in glob_reports():
        kubectl("apply", "--server-side", "-f", path)
    for ns in NAMESPACES:
        kubectl("create", "namespace", ns, check=False)
    deadline = time.monotonic() + 60
    while kubectl("get", PLURAL, "-A", check=False).returncode != 0 or \
            kubectl("get", "reports.openreports.io", "-A", check=False).returncode != 0:
        assert time.monotonic() < deadline, "CRDs never served"
        time.sleep(0.3)


def glob_reports() -> list[str]:
    files = sorted(os.path.join(REPORTS, f) for f in os.listdir(REPORTS) if f.endswith(".yaml")) \
        if os.path.isdir(REPORTS) else []
    assert files, f"policy-report CRDs missing in {REPORTS} (the tests read ../shared/reports; CI has it)"
    return files


def served_with(kubectl, tmp_path, enforcement: dict):
    config = {"featureGates": adopters.ALL_GATES, "targets": [TARGET], "enforcement": enforcement}
    probe = auditjob("probe", "rollout-a", {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}, "all": {}}})

    def called() -> bool:      # DIS-1 mirrors kube-apiserver: always denied, whatever the enforcement
        proc = kubectl.create(probe, "--dry-run=server", check=False)
        return proc.returncode != 0 and "spec.scheduling.disruptionMode" in proc.stderr
    return adopters.ProfileWebhook(kubectl, str(tmp_path), "rollout", config).start(called)


def audit_events(cluster, name: str) -> list[dict]:
    events = []
    with open(cluster.audit_log_path) as f:
        for line in f:
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if ref.get("resource") == PLURAL and ref.get("name") == name and event.get("stage") == "ResponseComplete":
                events.append(event)
    return events


def test_deny_warn_audit_on_the_same_object(cluster, kubectl, crd, tmp_path):
    hook = served_with(kubectl, tmp_path / "deny", {})
    try:
        proc = kubectl.create(auditjob("bad", "rollout-a", BAD), check=False)
        assert proc.returncode != 0 and "(DIS-2)" in proc.stderr
        assert not kubectl.exists(PLURAL, "bad", "rollout-a")
    finally:
        hook.stop()
    hook = served_with(kubectl, tmp_path / "warn", {"rules": {"DIS-2": "warn"}})
    try:
        proc = kubectl.create(auditjob("bad", "rollout-a", BAD))
        assert "Warning: spec.scheduling.disruptionMode: Invalid value" in proc.stderr and "(DIS-2)" in proc.stderr
        assert kubectl.exists(PLURAL, "bad", "rollout-a")
    finally:
        hook.stop()
    hook = served_with(kubectl, tmp_path / "audit", {"default": "audit"})
    try:
        proc = kubectl.create(auditjob("bad-audited", "rollout-a", BAD))
        assert "Warning" not in proc.stderr
        deadline = time.monotonic() + 10
        annotated = []
        while not annotated and time.monotonic() < deadline:
            annotated = [e for e in audit_events(cluster, "bad-audited")
                         if any(k.endswith("/violations") for k in (e.get("annotations") or {}))]
            time.sleep(0.2)
        assert annotated, "no audit event carries the webhook's violations annotation"
        value = next(v for k, v in annotated[0]["annotations"].items() if k.endswith("/violations"))
        assert json.loads(value)[0]["rule"] == "DIS-2"
    finally:
        hook.stop()
    kubectl("delete", PLURAL, "bad", "bad-audited", "-n", "rollout-a")


def clear(kubectl) -> None:
    """One DELETE of the collection per namespace (kubectl delete --all sends one per object)."""
    for ns in NAMESPACES:
        kubectl("delete", "--raw", f"/apis/{GROUP}/v1/namespaces/{ns}/{PLURAL}", timeout=120)


def _run_audit(tmp_path, cluster, *extra) -> tuple[int, dict, int]:
    config = tmp_path / "audit.yaml"
    config.write_text(yaml.safe_dump({"targets": [TARGET], "featureGates": adopters.ALL_GATES}))
    proc, peak_mib = memory.peak([sys.executable, "-m", "webhook", "audit", "--config", str(config), "--kubeconfig",
                                   cluster.kubeconfig("admin"), "--page-size", "200", "-o", "json", *extra],
                                  cwd=REPO, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout), int(peak_mib * 1024)


def _reports(kubectl) -> dict[str, dict]:
    items = json.loads(kubectl("get", "reports.openreports.io", "-A", "-o", "json").stdout)["items"]
    return {r["metadata"]["namespace"]: r for r in items if r["metadata"]["name"] == "workload-webhook"}


def test_audit_reports_two_thousand_objects(cluster, kubectl, crd, tmp_path):
    # 2,000 objects, 300 violating (DIS-2), created with no webhook registered for them.
    objs = [auditjob(f"job-{i}", NAMESPACES[i % 4], BAD if (i // 4) % 20 < 3 else GOOD) for i in range(2000)]
    clear(kubectl)
    for start in range(0, 2000, 500):
        kubectl("create", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs[start:start + 500]}),
                timeout=300)
    code, out, peak_kib = _run_audit(tmp_path, cluster, "--report")
    assert code == 1 and out["objects"] >= 2000
    assert {(s["rule"], s["action"]): s["objects"] for s in out["summary"]}[("DIS-2", "deny")] == 300
    reports = _reports(kubectl)
    assert {ns: (r["summary"]["fail"], r["summary"]["pass"]) for ns, r in reports.items() if ns in NAMESPACES} == \
        {ns: (75, 425) for ns in NAMESPACES}
    assert all(len(r["results"]) == 75 and r["results"][0]["result"] == "fail" for ns, r in reports.items() if ns in NAMESPACES)
    assert peak_kib < 300 * 1024, f"audit peaked at {peak_kib // 1024} MiB"
    # Fix 100 (25 per namespace): a second run replaces the reports.
    fixed = [o for o in objs if o["spec"]["scheduling"] == BAD][:100]
    for o in fixed:
        o["spec"]["scheduling"] = GOOD
    kubectl("replace", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": fixed}), timeout=300)
    code, out, _ = _run_audit(tmp_path, cluster, "--report")
    reports = _reports(kubectl)
    fails = {ns: reports[ns]["summary"]["fail"] for ns in NAMESPACES}
    assert sum(fails.values()) == 200 and code == 1
    names = {r["resources"][0]["name"] for ns in NAMESPACES for r in reports[ns]["results"]}
    assert not names & {o["metadata"]["name"] for o in fixed}
    # The wgpolicy format too; --fail-on is honoured.
    code, _, _ = _run_audit(tmp_path, cluster, "--report", "--report-format", "wgpolicy")
    polr = json.loads(kubectl("get", "policyreports.wgpolicyk8s.io", "-n", "rollout-a", "workload-webhook", "-o", "json").stdout)
    assert polr["summary"]["fail"] == fails["rollout-a"]
    clear(kubectl)


def test_the_chart_audit_cronjob_runs_with_the_least_rbac(cluster, kubectl, crd, tmp_path):
    """The chart's CronJob (off by default) and its ServiceAccount: the rendered
    RBAC is applied for real; the audit run as that ServiceAccount writes its
    reports, and the account can do nothing else."""
    ns, release = "rollout-chart", "rc"
    name = f"{release}-workload-webhook-audit"
    kubectl("create", "namespace", ns, check=False)
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"webhook": {"url": "https://127.0.0.1:9"}, "audit": {"enabled": True},
                                      "config": {"targets": [TARGET], "featureGates": adopters.ALL_GATES}}))
    chart = os.path.join(REPO, "charts", "workload-webhook")
    out = subprocess.run([cluster.helm, "template", release, chart, "-n", ns, "-f", str(values)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    assert not [d for d in yaml.safe_load_all(subprocess.run(
        [cluster.helm, "template", release, chart, "-n", ns, "--set", "webhook.url=https://127.0.0.1:9"],
        capture_output=True, text=True, timeout=60).stdout) if d and d["kind"] == "CronJob"], "the audit is off by default"
    audit_docs = [d for d in docs if d["metadata"]["name"] == name]
    assert {d["kind"] for d in audit_docs} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "CronJob"}
    rbac = [dict(d, metadata={**d["metadata"], "namespace": ns}) if d["kind"] == "ServiceAccount" else d
            for d in audit_docs if d["kind"] != "CronJob"]
    kubectl.apply(rbac)
    cron = next(d for d in audit_docs if d["kind"] == "CronJob")
    cron["metadata"]["namespace"] = ns
    kubectl.apply(cron, "--dry-run=server")
    assert cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"] == name
    who = f"system:serviceaccount:{ns}:{name}"

    def can(*args) -> bool:
        return kubectl("auth", "can-i", *args, "--as", who, check=False).stdout.strip() == "yes"
    assert can("list", f"{PLURAL}.{GROUP}", "--all-namespaces") and can("create", "reports.openreports.io", "-n", "x")
    for denied in (["get", "secrets", "-n", ns], ["delete", f"{PLURAL}.{GROUP}", "-n", "rollout-a"],
                   ["update", "workloads.scheduling.k8s.io", "-n", "x"], ["create", "pods", "-n", ns], ["*", "*"]):
        assert not can(*denied), denied
    kubeconfig = token_kubeconfig(cluster, kubectl, name, ns, tmp_path / "audit-sa.kubeconfig")
    kubectl.create(auditjob("chart-bad", "rollout-chart", BAD))
    config = tmp_path / "chart-config.yaml"
    config.write_text(yaml.safe_dump({"targets": [TARGET], "featureGates": adopters.ALL_GATES}))
    proc = subprocess.run([sys.executable, "-m", "webhook", "audit", "--config", str(config), "--kubeconfig",
                           str(kubeconfig), "--report", "--fail-on", "never"], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = kubectl.get("reports.openreports.io", "workload-webhook", "rollout-chart")
    assert report["summary"]["fail"] == 1 and report["results"][0]["resources"][0]["name"] == "chart-bad"
