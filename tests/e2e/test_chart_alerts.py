"""The chart's alerts and dashboard (issue 30, point 3). The PrometheusRule the real helm renders
passes `promtool check rules`, and `promtool test rules` (tests/e2e/alerts/alerts_test.yaml) fires
every alert on a synthetic series; each alert has its runbook section in docs/operations.md. Every
query of the alerts and of the Grafana dashboard names a metric the service exports, read from the
code (the metric definitions of webhook/), and is valid PromQL (promtool parses each one)."""
from __future__ import annotations

import ast
import glob
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from tests.e2e.test_chart_templates import CHART, EVERYTHING, NS, one, render
from tests.e2e.tools import built_tool
from tests.server.harness import REPO
from tests.unit.markdown import anchors, table_after

ALERTS_TEST = os.path.join(REPO, "tests", "e2e", "alerts", "alerts_test.yaml")
DASHBOARD = os.path.join(CHART, "dashboards", "workload-webhook.json")
OPERATIONS = os.path.join(REPO, "docs", "operations.md")
# What the scrape adds besides the service's own series.
SCRAPE_METRICS = {"up"}
METRIC_TYPES = {"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram", "Summary": "summary",
                "Info": "info", "Enum": "stateset", "CounterMetricFamily": "counter", "GaugeMetricFamily": "gauge",
                "HistogramMetricFamily": "histogram", "SummaryMetricFamily": "summary", "InfoMetricFamily": "info"}


@pytest.fixture(scope="session")
def promtool() -> str:
    return built_tool("promtool")


def exported_series() -> dict[str, str]:
    """Every series name the service exposes on /metrics, from the metric definitions in webhook/
    (prometheus_client's constructors and metric families, named by a literal or a module constant):
    a counter as <name>_total, a histogram as its _bucket, _sum and _count."""
    out: dict[str, str] = {}
    for path in glob.glob(os.path.join(REPO, "webhook", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        constants = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                     and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                     for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            first = node.args[0]
            name = first.value if isinstance(first, ast.Constant) else constants.get(getattr(first, "id", ""))
            if callee in METRIC_TYPES and isinstance(name, str) and name.startswith("workload_webhook_"):
                kind = METRIC_TYPES[callee]
                if kind == "counter":
                    out[name if name.endswith("_total") else f"{name}_total"] = kind
                elif kind in ("histogram", "summary"):
                    out.update({f"{name}{s}": kind for s in ("_bucket", "_sum", "_count")[kind == "summary":]})
                else:
                    out[name] = kind
    assert out, "no metric definitions found in webhook/"
    return out


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: the service's (workload_webhook_*) and `up`."""
    return set(re.findall(r"\bworkload_webhook_[a-z0-9_]+", expr)) | \
        {m for m in re.findall(r"\b([a-z_:][a-z0-9_:]*)\s*\{", expr) if m in SCRAPE_METRICS}


def rendered_rules(bin_dir, tmp_path, values: dict | None = None) -> dict:
    docs = render(bin_dir, tmp_path, {"prometheusRule": {"enabled": True}, **(values or {})})
    return {"groups": one(docs, "PrometheusRule")["spec"]["groups"]}


def dashboard_queries() -> list[tuple[str, str]]:
    with open(DASHBOARD, encoding="utf-8") as f:
        dash = json.load(f)
    out = [(f"panel {p['title']}", t["expr"]) for p in dash["panels"] for t in p.get("targets", [])]
    out += [(f"variable {v['name']}", v["query"]["query"]) for v in dash["templating"]["list"] if v["type"] == "query"]
    return out


def test_the_rules_pass_promtool_check_and_every_alert_fires_in_promtool_test(bin_dir, tmp_path, promtool):
    rules = rendered_rules(bin_dir, tmp_path)
    work = tmp_path / "promtool"
    work.mkdir()
    (work / "rules.yaml").write_text(yaml.safe_dump(rules))
    shutil.copy(ALERTS_TEST, work / "alerts_test.yaml")
    proc = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=work, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "SUCCESS: 11 rules found" in proc.stdout, proc.stdout + proc.stderr
    proc = subprocess.run([promtool, "test", "rules", "alerts_test.yaml"], cwd=work, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout + proc.stderr
    # Each alert is fired by a case of the test file (and a new alert cannot go untested).
    with open(ALERTS_TEST, encoding="utf-8") as f:
        cases = yaml.safe_load(f)["tests"]
    fired = {c["alertname"] for t in cases for c in t["alert_rule_test"] if c["exp_alerts"]}
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    assert fired == alerts, (sorted(alerts - fired), sorted(fired - alerts))


def test_a_broken_threshold_fails_the_promtool_test(bin_dir, tmp_path, promtool):
    """The promtool test can fail: the same cases against rules with another error ratio."""
    work = tmp_path / "promtool"
    work.mkdir()
    (work / "rules.yaml").write_text(yaml.safe_dump(rendered_rules(bin_dir, tmp_path,
                                                                   {"prometheusRule": {"enabled": True,
                                                                                       "errorRatio": 0.2}})))
    shutil.copy(ALERTS_TEST, work / "alerts_test.yaml")
    proc = subprocess.run([promtool, "test", "rules", "alerts_test.yaml"], cwd=work, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0 and "alertname: WorkloadWebhookErrors" in proc.stdout + proc.stderr


def test_every_alert_has_a_runbook_section_and_names_exported_metrics(bin_dir, tmp_path):
    exported = exported_series()
    with open(OPERATIONS, encoding="utf-8") as f:
        headings = {line[4:].strip() for line in f if line.startswith("### ")}
    for rule in (r for g in rendered_rules(bin_dir, tmp_path)["groups"] for r in g["rules"]):
        alert = rule["alert"]
        assert alert in headings, f"docs/operations.md has no section ### {alert}"
        assert rule["annotations"]["runbook"] == f"docs/operations.md#{alert.lower()}", alert
        assert "runbook_url" not in rule["annotations"], alert
        assert rule["labels"]["severity"] in ("critical", "warning"), alert
        names = metric_names(rule["expr"])
        assert names, alert
        assert names <= set(exported) | SCRAPE_METRICS, (alert, sorted(names - set(exported)))
        assert f'job="wwt-workload-webhook",namespace="{NS}"' in rule["expr"], alert


def test_the_thresholds_are_values(bin_dir, tmp_path):
    rules = {r["alert"]: r for g in rendered_rules(bin_dir, tmp_path, {"prometheusRule": {
        "enabled": True, "selector": 'service="ww"', "errorRatio": 0.01, "certificateExpiryDays": 30,
        "latencyRatio": 0.2, "labels": {"release": "prom"}}, "webhook": {"timeoutSeconds": 10}})["groups"]
        for r in g["rules"]}
    assert rules["WorkloadWebhookErrors"]["expr"].rstrip().endswith("> 0.01")
    assert rules["WorkloadWebhookCertificateExpiresSoon"]["expr"].endswith(f"< {30 * 86400}")
    assert rules["WorkloadWebhookSlow"]["expr"].rstrip().endswith(">= 2")            # 0.2 x 10 s
    assert all('{service="ww"' in r["expr"] for r in rules.values())
    # Beyond the last bucket (2.5 s) no p99 can be read: the threshold stops there.
    slow = rendered_rules(bin_dir, tmp_path, {"webhook": {"timeoutSeconds": 30}})["groups"][0]["rules"]
    assert next(r for r in slow if r["alert"] == "WorkloadWebhookSlow")["expr"].rstrip().endswith(">= 2.5")


def test_every_dashboard_query_names_an_exported_metric_and_parses(tmp_path, promtool):
    exported = set(exported_series()) | SCRAPE_METRICS
    queries = dashboard_queries()
    assert len(queries) >= 20
    for where, expr in queries:
        names = metric_names(expr)
        assert names, f"{where}: names no metric: {expr}"
        assert names <= exported, f"{where}: {sorted(names - exported)} not exported by the service"
    # promtool parses each (as a recording rule), with Grafana's variables filled in.
    filled = [re.sub(r"\$__rate_interval", "5m", e).replace("$namespace", "ww-t").replace("$job", "wwt-workload-webhook")
              for _, e in queries if not e.startswith("label_values(")]
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": e} for i, e in enumerate(filled)]}]}))
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Variables select by metrics the service exports too.
    assert all(metric_names(e) <= exported for w, e in queries if w.startswith("variable"))


def test_the_dashboard_configmap_carries_the_sidecar_label_and_the_json(bin_dir, tmp_path):
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "grafanaDashboard": {
        "enabled": True, "namespace": "monitoring", "annotations": {"grafana_folder": "Admission"}}})
    cm = one(docs, "ConfigMap", "wwt-workload-webhook-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1" and cm["metadata"]["namespace"] == "monitoring"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "Admission"}
    with open(DASHBOARD, encoding="utf-8") as f:
        assert json.loads(cm["data"]["workload-webhook.json"]) == json.load(f)
    rule = one(render(bin_dir, tmp_path, {"prometheusRule": {"enabled": True, "namespace": "monitoring",
                                                             "labels": {"release": "prom"}}}), "PrometheusRule")
    assert (rule["metadata"]["namespace"], rule["metadata"]["labels"]["release"]) == ("monitoring", "prom")


def test_the_metric_reader_follows_the_code():
    """The reader finds what the code defines (a counter's _total, a histogram's series)."""
    series = exported_series()
    assert series["workload_webhook_requests_total"] == "counter"
    assert {"workload_webhook_request_duration_seconds_bucket", "workload_webhook_request_duration_seconds_count"} \
        <= set(series)
    assert metric_names('sum(rate(workload_webhook_requests_total{verdict="error"}[5m])) / sum(up{job="x"})') == \
        {"workload_webhook_requests_total", "up"}


def test_every_runbook_link_names_an_anchor_of_operations_md_and_a_set_base_makes_it_a_url(bin_dir, tmp_path):
    with open(OPERATIONS, encoding="utf-8") as f:
        page = anchors(f.read())
    base = "https://example.com/ww/docs/operations.md"
    published = {r["alert"]: r for g in rendered_rules(bin_dir, tmp_path, {"prometheusRule": {
        "enabled": True, "runbookBaseURL": base}})["groups"] for r in g["rules"]}
    for rule in (r for g in rendered_rules(bin_dir, tmp_path)["groups"] for r in g["rules"]):
        path, _, anchor = rule["annotations"]["runbook"].partition("#")
        assert path == "docs/operations.md" and os.path.exists(os.path.join(REPO, path)), rule["alert"]
        assert anchor in page, (rule["alert"], anchor)
        annotations = published[rule["alert"]]["annotations"]
        assert annotations["runbook_url"] == f"{base}#{anchor}" and "runbook" not in annotations, annotations
    # A base that is not a URL is refused by values.schema.json.
    proc = render(bin_dir, tmp_path, {"prometheusRule": {"enabled": True, "runbookBaseURL": "docs/"}}, check=False)
    assert proc.returncode != 0 and "runbookBaseURL" in proc.stderr, proc.stderr


ALERTS_MARK = "<!-- alerts table:"
COMPARISON = re.compile(r"(==|!=|>=|<=|>|<)\s*([0-9.]+)")


def alerts_table() -> dict[str, dict[str, str]]:
    with open(OPERATIONS, encoding="utf-8") as f:
        rows = table_after(f.read(), ALERTS_MARK)
    return {re.match(r"\[(\w+)\]", r["alert"]).group(1): r for r in rows}


def runbook_sections() -> dict[str, str]:
    with open(OPERATIONS, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for part in text.split("\n### ")[1:]:
        name, _, body = part.partition("\n")
        out[name.strip()] = body.split("\n## ")[0]
    return out


def test_the_docs_give_each_alert_its_for_and_threshold_as_the_rule_has_them(bin_dir, tmp_path):
    """docs/operations.md's alert table and each runbook section state the rule's `for:`; the
    table's threshold cell holds the rule's last comparison, and every comparison it names is in
    the rule (with the default values)."""
    table, sections = alerts_table(), runbook_sections()
    rules = [r for g in rendered_rules(bin_dir, tmp_path)["groups"] for r in g["rules"]]
    assert set(table) == {r["alert"] for r in rules}
    for rule in rules:
        alert, expr = rule["alert"], " ".join(rule["expr"].split())
        row = table[alert]
        assert row["for"] == f"`{rule['for']}`", (alert, row["for"], rule["for"])
        assert f"`for: {rule['for']}`" in sections[alert], f"### {alert} does not say `for: {rule['for']}`"
        assert row["severity"] == rule["labels"]["severity"], alert
        stated = re.findall(r"`([^`]+)`", row["threshold"])
        assert stated, alert
        last = COMPARISON.findall(expr)[-1]
        assert f"{last[0]} {last[1]}" in stated and expr.endswith(f"{last[0]} {last[1]}"), (alert, stated, expr)
        for comparison in stated:
            assert comparison in expr, (alert, comparison, expr)


def test_no_ready_replicas_reads_readiness_not_scrapes_and_kube_state_metrics_on_request(bin_dir, tmp_path, promtool):
    """A Running but unready replica answers scrapes: the alert reads workload_webhook_ready (or,
    with readinessFrom kubeStateMetrics, the Deployment's available replicas), never `up`."""
    def alert(values):
        return next(r for g in rendered_rules(bin_dir, tmp_path, values)["groups"] for r in g["rules"]
                    if r["alert"] == "WorkloadWebhookNoReadyReplicas")
    default = alert(None)
    assert metric_names(default["expr"]) == {"workload_webhook_ready"}, default["expr"]
    ksm = alert({"prometheusRule": {"enabled": True, "readinessFrom": "kubeStateMetrics"}})
    assert "kube_deployment_status_replicas_available" in ksm["expr"] and "up{" not in ksm["expr"], ksm["expr"]
    work = tmp_path / "ksm"
    work.mkdir()
    (work / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "ksm", "rules": [ksm]}]}))
    deployment = f'kube_deployment_status_replicas_available{{namespace="{NS}",deployment="wwt-workload-webhook"}}'
    other = f'kube_deployment_status_replicas_available{{namespace="{NS}",deployment="other"}}'
    (work / "test.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": [{"series": deployment, "values": "2x5 0x15 1x10"},
                                            {"series": other, "values": "3x30"}],
         "alert_rule_test": [
             {"eval_time": "4m", "alertname": "WorkloadWebhookNoReadyReplicas", "exp_alerts": []},
             {"eval_time": "15m", "alertname": "WorkloadWebhookNoReadyReplicas",
              "exp_alerts": [{"exp_labels": {"severity": "critical", "namespace": NS},
                              "exp_annotations": ksm["annotations"]}]},
             {"eval_time": "25m", "alertname": "WorkloadWebhookNoReadyReplicas", "exp_alerts": []}]}]}))
    proc = subprocess.run([promtool, "test", "rules", "test.yaml"], cwd=work, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout + proc.stderr
    proc = render(bin_dir, tmp_path, {"prometheusRule": {"enabled": True, "readinessFrom": "up"}}, check=False)
    assert proc.returncode != 0 and "readinessFrom" in proc.stderr, proc.stderr
