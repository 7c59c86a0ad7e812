"""The chart as the real helm renders it (issue 27): its components are distinct (no audit or
test Pod matches a selector of the serving Pods), the metrics have a port of their own that the
Service, ServiceMonitor and NetworkPolicy follow, `helm test` is hooks in the release namespace
that are deleted pass or fail, and the registration policy is bounded by the release's values.
Every name fits Kubernetes' limits for any release name helm accepts (issue 30, point 4), as the
real API server judges them. What it does with these objects is in test_chart.py and
test_chart_node.py; the standard knobs are in test_chart_knobs.py."""
from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from tests.server.harness import REPO

CHART = os.path.join(REPO, "charts", "workload-webhook")
NS, RELEASE, FULLNAME = "ww-t", "wwt", "wwt-workload-webhook"
TARGET = {"group": "training.example.com", "kind": "TrainJob", "versions": ["v1alpha1"],
          "groups": [{"schedulingPolicy": "spec.scheduling.schedulingPolicy", "size": "spec.replicas"}]}
EVERYTHING = {"audit": {"enabled": True}, "networkPolicy": {"enabled": True}, "serviceMonitor": {"enabled": True},
              "config": {"targets": [TARGET], "profiles": ["jobset"]}}


def render(bin_dir, tmp_path, values: dict | None = None, check: bool = True):
    path = tmp_path / f"values-{len(os.listdir(tmp_path))}.yaml"
    path.write_text(yaml.safe_dump(values or {}))
    proc = subprocess.run([os.path.join(bin_dir, "helm"), "template", RELEASE, CHART, "-n", NS, "-f", str(path)],
                          capture_output=True, text=True, timeout=60)
    if not check:
        return proc
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def one(docs, kind: str, name: str | None = None) -> dict:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, [d["metadata"]["name"] for d in found])
    return found[0]


def matches(selector: dict, labels: dict) -> bool:
    """A label selector (matchLabels only, as the chart writes them) or a Service's plain map."""
    assert "matchExpressions" not in selector, selector
    want = selector.get("matchLabels", selector)
    return bool(want) and all(labels.get(k) == v for k, v in want.items())


def test_no_audit_or_test_pod_matches_a_selector_of_the_serving_pods(bin_dir, tmp_path):
    docs = render(bin_dir, tmp_path, EVERYTHING)
    deployment = one(docs, "Deployment")
    serving = deployment["spec"]["template"]["metadata"]["labels"]
    audit = one(docs, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    test_pod = next(d for d in docs if d["kind"] == "Pod")["metadata"]["labels"]
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["labelSelector"]
    selectors = {"Deployment": deployment["spec"]["selector"], "Service": one(docs, "Service")["spec"]["selector"],
                 "PodDisruptionBudget": one(docs, "PodDisruptionBudget")["spec"]["selector"],
                 "NetworkPolicy": one(docs, "NetworkPolicy")["spec"]["podSelector"], "spread": spread}
    for what, selector in selectors.items():
        assert matches(selector, serving), what
        assert not matches(selector, audit), f"the audit Pods match the {what} selector"
        assert not matches(selector, test_pod), f"the helm-test Pod matches the {what} selector"
    # The serving component is named as such, on the objects and in their selectors.
    for kind in ("Deployment", "PodDisruptionBudget", "NetworkPolicy", "Service", "ServiceMonitor"):
        assert one(docs, kind)["metadata"]["labels"]["app.kubernetes.io/component"] == "webhook", kind
    assert serving["app.kubernetes.io/component"] == "webhook"
    for what in ("PodDisruptionBudget", "NetworkPolicy", "spread"):
        assert selectors[what]["matchLabels"]["app.kubernetes.io/component"] == "webhook", what
    assert (audit["app.kubernetes.io/component"], test_pod["app.kubernetes.io/component"]) == ("audit", "test")
    assert audit["app.kubernetes.io/instance"] == test_pod["app.kubernetes.io/instance"] == RELEASE
    # The Deployment's selector is what 0.1.0 had: it is immutable, so an upgrade keeps working.
    assert deployment["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "workload-webhook",
                                                              "app.kubernetes.io/instance": RELEASE}}


def test_metrics_have_their_own_port_and_the_service_servicemonitor_and_networkpolicy_follow(bin_dir, tmp_path):
    scraper = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    api_server = [{"ipBlock": {"cidr": "10.0.0.0/24"}}]
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "networkPolicy": {"enabled": True, "ingressFrom": api_server,
                                                                      "metricsFrom": scraper}})
    config = yaml.safe_load(one(docs, "ConfigMap", FULLNAME)["data"]["config.yaml"])
    assert (config["server"]["port"], config["server"]["metricsPort"], config["server"]["metricsTLS"]) == (8443, 9090, True)
    ports = {p["name"]: p["containerPort"] for p in one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert ports == {"https": 8443, "metrics": 9090}
    assert {p["name"]: (p["port"], p["targetPort"]) for p in one(docs, "Service")["spec"]["ports"]} == \
        {"https": (443, "https"), "metrics": (9090, "metrics")}
    endpoint = one(docs, "ServiceMonitor")["spec"]["endpoints"][0]
    assert (endpoint["port"], endpoint["scheme"], endpoint["tlsConfig"]["serverName"]) == \
        ("metrics", "https", f"{FULLNAME}.{NS}.svc")
    # The NetworkPolicy: admission from the API server (and this release's helm-test Pod) only,
    # the metrics port from the scraper only; nothing reaches admission through the metrics rule.
    ingress = one(docs, "NetworkPolicy")["spec"]["ingress"]
    assert [[p["port"] for p in rule["ports"]] for rule in ingress] == [[8443], [9090]]
    assert ingress[0]["from"] == api_server + [{"podSelector": {"matchLabels": {
        "app.kubernetes.io/instance": RELEASE, "app.kubernetes.io/component": "test"}}}]
    assert ingress[1]["from"] == scraper
    # Plain HTTP when asked.
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "server": {"metricsTLS": False, "metricsPort": 9100}})
    endpoint = one(docs, "ServiceMonitor")["spec"]["endpoints"][0]
    assert (endpoint["port"], endpoint["scheme"], "tlsConfig" in endpoint) == ("metrics", "http", False)
    assert yaml.safe_load(one(docs, "ConfigMap", FULLNAME)["data"]["config.yaml"])["server"]["metricsTLS"] is False
    proc = render(bin_dir, tmp_path, {"server": {"metricsPort": 8443}}, check=False)
    assert proc.returncode != 0 and "server.metricsPort (8443) must differ from server.port" in proc.stderr


def test_helm_test_is_hooks_in_the_release_namespace_deleted_pass_or_fail(bin_dir, tmp_path):
    docs = render(bin_dir, tmp_path, EVERYTHING)
    hooks = [d for d in docs if (d["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"]
    assert sorted(d["kind"] for d in hooks) == ["ClusterRole", "ClusterRoleBinding", "Pod", "Role", "RoleBinding",
                                                "ServiceAccount"]
    for d in hooks:
        policy = set(d["metadata"]["annotations"]["helm.sh/hook-delete-policy"].split(","))
        assert policy == {"before-hook-creation", "hook-succeeded", "hook-failed"}, d["kind"]
        assert d["metadata"].get("namespace") in (None, NS), d["kind"]     # the release namespace
    for binding in (d for d in hooks if d["kind"].endswith("Binding")):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": f"{FULLNAME}-test", "namespace": NS}]
    pod = one(hooks, "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook-output-log-policy"] == "hook-succeeded,hook-failed"
    assert pod["spec"]["containers"][0]["args"] == ["check", f"--name={FULLNAME}", f"--namespace={NS}", "--timeout=60"]
    # Read-only: get its two configurations, its Service, and list the Service's EndpointSlices.
    verbs = {v for d in hooks if d["kind"] in ("ClusterRole", "Role") for r in d["rules"] for v in r["verbs"]}
    assert verbs == {"get", "list"}
    role = one(hooks, "Role")
    assert [(r["resources"], r.get("resourceNames")) for r in role["rules"]] == [
        (["services"], [FULLNAME]), (["endpointslices"], None)]


def _policy(docs) -> dict:
    return one(docs, "ValidatingAdmissionPolicy", f"{FULLNAME}-registration")


def test_the_registration_policy_binds_the_service_account_and_the_groups_its_config_implies(bin_dir, tmp_path):
    docs = render(bin_dir, tmp_path, EVERYTHING)
    policy = _policy(docs)["spec"]
    assert policy["matchConditions"] == [{"name": "the-release-service-account", "expression":
                                          f"request.userInfo.username == 'system:serviceaccount:{NS}:{FULLNAME}'"}]
    groups = next(v["expression"] for v in policy["variables"] if v["name"] == "groups")
    assert yaml.safe_load(groups) == ["scheduling.k8s.io", "", "training.example.com", "jobset.x-k8s.io"]
    assert set(policy["matchConstraints"]["resourceRules"][0]["operations"]) == {"CREATE", "UPDATE"}
    text = yaml.safe_dump(policy)
    assert f"w.clientConfig.service.name == '{FULLNAME}'" in text and f"object.metadata.name == '{FULLNAME}'" in text
    binding = one(docs, "ValidatingAdmissionPolicyBinding", f"{FULLNAME}-registration")
    assert binding["spec"] == {"policyName": f"{FULLNAME}-registration", "validationActions": ["Deny"]}
    # url mode with certificates from elsewhere: the ServiceAccount writes no configuration, so no policy.
    docs = render(bin_dir, tmp_path, {"webhook": {"url": "https://wh.example.com:9443"},
                                      "certificates": {"mode": "certManager"}})
    assert not [d for d in docs if d["metadata"]["name"] == f"{FULLNAME}-registration"]
    # url mode, self certificates (the service patches the caBundle): bound to that URL.
    docs = render(bin_dir, tmp_path, {"webhook": {"url": "https://wh.example.com:9443"}})
    assert "['https://wh.example.com:9443/validate', 'https://wh.example.com:9443/mutate']" in yaml.safe_dump(
        _policy(docs)["spec"], width=10000)


@pytest.mark.parametrize("values", [{}, EVERYTHING, {"webhook": {"url": "https://127.0.0.1:9443"}}])
def test_helm_lint_strict_is_clean(bin_dir, tmp_path, values):
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    proc = subprocess.run([os.path.join(bin_dir, "helm"), "lint", "--strict", CHART, "-f", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "0 chart(s) failed" in proc.stdout, proc.stdout + proc.stderr


# ---------------------------------------------------------------- names within Kubernetes' limits

LONGEST = "r" * 45 + "-release"                      # 53 characters: the longest name helm accepts
NAME_LIMITS = {"CronJob": 52}                          # a Job's name is the CronJob's plus 11 characters
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
NO_CRD_HERE = ("cert-manager.io/", "monitoring.coreos.com/")
ALL_OBJECTS = {**EVERYTHING, "prometheusRule": {"enabled": True}, "grafanaDashboard": {"enabled": True}}


def render_as(bin_dir, tmp_path, release: str, values: dict, namespace: str = NS) -> list[dict]:
    path = tmp_path / f"values-{len(os.listdir(tmp_path))}.yaml"
    path.write_text(yaml.safe_dump(values))
    proc = subprocess.run([os.path.join(bin_dir, "helm"), "template", release, CHART, "-n", namespace, "-f", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and "webhooks.yaml" in (d.get("data") or {}))
    return docs + [d for d in yaml.safe_load_all(cm["data"]["webhooks.yaml"]) if d]   # what the Pods register


@pytest.mark.parametrize("values", [ALL_OBJECTS, {**ALL_OBJECTS, "certificates": {"mode": "certManager"}}],
                         ids=["self", "certManager"])
def test_every_name_fits_for_a_53_character_release_and_the_api_server_agrees(bin_dir, tmp_path, kubectl, values):
    namespace = "ww-names"
    docs = render_as(bin_dir, tmp_path, LONGEST, values, namespace)
    by_kind: dict[str, list[str]] = {}
    for d in docs:
        name = d["metadata"]["name"]
        assert len(name) <= NAME_LIMITS.get(d["kind"], 63) and DNS_LABEL.match(name), (d["kind"], name, len(name))
        by_kind.setdefault(d["kind"], []).append(name)
        labels = dict(d["metadata"].get("labels") or {})
        for template in (d.get("spec", {}).get("template"), d.get("spec", {}).get("jobTemplate", {}).get("spec", {})
                         .get("template")):
            labels.update(((template or {}).get("metadata") or {}).get("labels") or {})
        assert all(len(str(v)) <= 63 for v in labels.values()), (d["kind"], name, labels)
    assert all(len(set(names)) == len(names) for names in by_kind.values()), by_kind
    # Whatever names something, names what the release creates.
    sa = set(by_kind["ServiceAccount"])
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] in sa
    assert one(docs, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"] in sa
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        assert binding["roleRef"]["name"] in by_kind[binding["kind"].removesuffix("Binding")], binding["metadata"]
        assert {s["name"] for s in binding["subjects"]} <= sa, binding["metadata"]
    for binding in by_kind["ValidatingAdmissionPolicyBinding"]:
        assert one(docs, "ValidatingAdmissionPolicyBinding", binding)["spec"]["policyName"] in \
            by_kind["ValidatingAdmissionPolicy"]
    service = one(docs, "Service")["metadata"]["name"]
    assert {h["clientConfig"]["service"]["name"] for d in docs if d["kind"].endswith("WebhookConfiguration")
            for h in d["webhooks"]} == {service}
    # The real kube-apiserver validates every object (the CronJob's 52 characters included).
    kubectl("create", "namespace", namespace, check=False)
    checkable = [d for d in docs if not d["apiVersion"].startswith(NO_CRD_HERE)
                 and not (d["metadata"].get("annotations") or {}).get("helm.sh/hook")]
    proc = kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(checkable),
                   check=False)
    assert proc.returncode == 0, proc.stderr


def test_long_names_that_differ_only_at_the_end_stay_distinct(bin_dir, tmp_path):
    names = []
    for release in (LONGEST, LONGEST[:-1] + "x"):
        docs = render_as(bin_dir, tmp_path, release, {"audit": {"enabled": True}})
        names.append((one(docs, "CronJob")["metadata"]["name"],
                      next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"
                           and d["metadata"]["name"].endswith("-registration"))["metadata"]["name"]))
    assert names[0][0] != names[1][0] and names[0][1] != names[1][1], names
    # A name that fits is left as it was.
    docs = render_as(bin_dir, tmp_path, RELEASE, {"audit": {"enabled": True}})
    assert one(docs, "CronJob")["metadata"]["name"] == f"{FULLNAME}-audit"
