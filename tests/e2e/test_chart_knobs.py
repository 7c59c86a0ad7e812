"""The chart's standard knobs (issue 30, point 4), as the real helm renders them: each is accepted
by values.schema.json (which refused every one before), lands where it belongs, and the defaults
render what they did. What the API server does with label-based exemptions is in
test_chart_exemptions.py; names within Kubernetes' limits in test_chart_templates.py."""
from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from tests.e2e.test_chart_templates import CHART, EVERYTHING, FULLNAME, NS, RELEASE, one, render

SERVING = {"app.kubernetes.io/name": "workload-webhook", "app.kubernetes.io/instance": RELEASE,
           "app.kubernetes.io/component": "webhook"}


def pods(docs) -> dict[str, dict]:
    """The three Pod specs the chart writes: serving, audit, helm test."""
    return {"serving": one(docs, "Deployment")["spec"]["template"]["spec"],
            "audit": one(docs, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"],
            "test": one(docs, "Pod")["spec"]}


def _release_config_map(docs) -> dict:
    found = [d for d in docs if d["kind"] == "ConfigMap" and "config.yaml" in (d.get("data") or {})]
    assert len(found) == 1, [d["metadata"]["name"] for d in found]
    return found[0]


def config(docs) -> dict:
    return yaml.safe_load(_release_config_map(docs)["data"]["config.yaml"])


def registered(docs) -> list[dict]:
    """The configurations the serving Pods register (the ConfigMap's webhooks.yaml)."""
    return [d for d in yaml.safe_load_all(_release_config_map(docs)["data"]["webhooks.yaml"]) if d]


def test_defaults_render_what_they_did(bin_dir, tmp_path):
    docs = render(bin_dir, tmp_path, EVERYTHING)
    spec = pods(docs)
    for name, pod in spec.items():
        assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                          "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}, name
        assert pod["containers"][0]["securityContext"] == {
            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "privileged": False,
            "capabilities": {"drop": ["ALL"]}}, name
        assert pod["containers"][0]["image"] == "workload-webhook:0.1.0", name
        assert "hostNetwork" not in pod and "dnsPolicy" not in pod, name
    serving = spec["serving"]
    container = serving["containers"][0]
    assert serving["serviceAccountName"] == FULLNAME and one(docs, "ServiceAccount", FULLNAME)
    assert serving["topologySpreadConstraints"] == [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                     "whenUnsatisfiable": "ScheduleAnyway",
                                                     "labelSelector": {"matchLabels": SERVING}}]
    assert {k: {x: v for x, v in container[k].items() if x != "httpGet"}
            for k in ("livenessProbe", "readinessProbe", "startupProbe")} == {
        "livenessProbe": {"periodSeconds": 10, "failureThreshold": 3}, "readinessProbe": {"periodSeconds": 5},
        "startupProbe": {"periodSeconds": 2, "failureThreshold": 60}}
    assert [m["name"] for m in container["volumeMounts"]] == ["config", "certs", "tmp"]
    assert [e["name"] for e in container["env"]] == ["PROMETHEUS_MULTIPROC_DIR", "POD_IP", "WW_REGISTER_REVISION", "POD_NAME",
                                                     "POD_NAMESPACE"]
    assert "envFrom" not in container and container["args"][-1] == f"--register-owner={FULLNAME}"
    assert "revisionHistoryLimit" not in one(docs, "Deployment")["spec"]
    assert one(docs, "PodDisruptionBudget")["spec"]["minAvailable"] == 1
    for hook in (h for doc in registered(docs) for h in doc["webhooks"]):
        assert "objectSelector" not in hook and hook["namespaceSelector"] == {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", NS]}]}
    assert not [d for d in docs if d["kind"] in ("PrometheusRule",) or d["metadata"]["name"].endswith("-dashboard")]
    assert "events" not in config(docs)


def test_name_overrides_name_every_object_and_the_labels(bin_dir, tmp_path):
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "fullnameOverride": "gang-guard"})
    names = {d["metadata"]["name"] for d in docs if not d["kind"].startswith("ValidatingAdmission")}
    assert names and all(n == "gang-guard" or n.startswith("gang-guard-") for n in names), names
    args = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--register-service=ww-t/gang-guard" in args and "--register-owner=gang-guard" in args
    assert {d["metadata"]["name"] for d in registered(docs)} == {"gang-guard"}
    assert all(h["clientConfig"]["service"]["name"] == "gang-guard" for d in registered(docs) for h in d["webhooks"])
    policy = one(docs, "ValidatingAdmissionPolicy", "gang-guard-registration")["spec"]
    assert policy["matchConditions"][0]["expression"] == \
        "request.userInfo.username == 'system:serviceaccount:ww-t:gang-guard'"
    assert config(docs)["certificates"]["secret"] == "ww-t/gang-guard-tls"
    # nameOverride: the name label (and selectors) and the full name's suffix.
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "nameOverride": "gangs"})
    deployment = one(docs, "Deployment", f"{RELEASE}-gangs")
    assert deployment["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "gangs",
                                                             "app.kubernetes.io/instance": RELEASE}
    assert one(docs, "Service")["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    audit = one(docs, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    assert (audit["app.kubernetes.io/name"], audit["app.kubernetes.io/part-of"]) == ("gangs-audit", "gangs")


def test_common_labels_are_on_every_object_and_in_no_selector(bin_dir, tmp_path):
    labels = {"team": "ml-platform", "app.kubernetes.io/name": "not-this"}
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "commonLabels": labels,
                                      "prometheusRule": {"enabled": True}, "grafanaDashboard": {"enabled": True}})
    for d in docs + registered(docs):
        assert d["metadata"]["labels"]["team"] == "ml-platform", (d["kind"], d["metadata"]["name"])
    # The chart's own labels win, and no selector gains the extra one.
    deployment = one(docs, "Deployment")
    assert deployment["metadata"]["labels"]["app.kubernetes.io/name"] == "workload-webhook"
    assert deployment["spec"]["template"]["metadata"]["labels"]["team"] == "ml-platform"
    assert "team" not in deployment["spec"]["selector"]["matchLabels"]
    assert "team" not in one(docs, "Service")["spec"]["selector"]
    assert "team" not in one(docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"]


def test_image_registry_and_digest(bin_dir, tmp_path):
    digest = "sha256:" + "ab" * 32
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "image": {"registry": "ghcr.io/", "repository": "acme/ww",
                                                              "tag": "0.2.0", "digest": digest}})
    assert {n: p["containers"][0]["image"] for n, p in pods(docs).items()} == \
        dict.fromkeys(("serving", "audit", "test"), f"ghcr.io/acme/ww:0.2.0@{digest}")
    # A parent chart's global.imageRegistry when image.registry is empty.
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "global": {"imageRegistry": "mirror.example.com"}})
    assert pods(docs)["serving"]["containers"][0]["image"] == "mirror.example.com/workload-webhook:0.1.0"
    proc = render(bin_dir, tmp_path, {"image": {"digest": "latest"}}, check=False)
    assert proc.returncode != 0 and "/image/digest" in proc.stderr


def test_security_contexts_override_all_three_pods(bin_dir, tmp_path):
    # e.g. OpenShift, which assigns the uid and gid: Helm merges values, so a key goes with null.
    pod_sc = {"runAsUser": None, "runAsGroup": None, "fsGroup": None}
    container_sc = {"privileged": None, "seLinuxOptions": {"level": "s0:c123,c456"}}
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "podSecurityContext": pod_sc, "securityContext": container_sc})
    for name, pod in pods(docs).items():
        assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}, name
        assert pod["containers"][0]["securityContext"] == {
            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
            "seLinuxOptions": {"level": "s0:c123,c456"}}, name


def test_extra_args_env_and_volumes_reach_the_serving_container(bin_dir, tmp_path):
    values = {"extraArgs": ["--log-level=debug"], "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}],
              "extraEnvFrom": [{"configMapRef": {"name": "proxy-env"}}],
              "extraVolumes": [{"name": "corp-ca", "configMap": {"name": "corp-ca"}}],
              "extraVolumeMounts": [{"name": "corp-ca", "mountPath": "/etc/corp-ca", "readOnly": True}]}
    spec = pods(render(bin_dir, tmp_path, {**EVERYTHING, **values}))["serving"]
    container = spec["containers"][0]
    assert container["args"][-1] == "--log-level=debug" and container["args"][0] == "serve"
    assert container["env"][-1] == values["extraEnv"][0] and container["envFrom"] == values["extraEnvFrom"]
    assert spec["volumes"][-1] == values["extraVolumes"][0]
    assert container["volumeMounts"][-1] == values["extraVolumeMounts"][0]


def test_service_account_create_name_and_annotations(bin_dir, tmp_path):
    irsa = {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/ww"}
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "serviceAccount": {"name": "ww-sa", "annotations": irsa}})
    assert one(docs, "ServiceAccount", "ww-sa")["metadata"]["annotations"] == irsa
    # An existing ServiceAccount: none created, and everything binds that one.
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "serviceAccount": {"create": False, "name": "platform-sa"}})
    assert not [d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"] in (FULLNAME, "platform-sa")]
    assert pods(docs)["serving"]["serviceAccountName"] == "platform-sa"
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        assert one(docs, kind, FULLNAME)["subjects"] == [{"kind": "ServiceAccount", "name": "platform-sa",
                                                          "namespace": NS}], kind
    policy = one(docs, "ValidatingAdmissionPolicy", f"{FULLNAME}-registration")["spec"]
    assert "system:serviceaccount:ww-t:platform-sa'" in policy["matchConditions"][0]["expression"]
    proc = render(bin_dir, tmp_path, {"serviceAccount": {"create": False}}, check=False)
    assert proc.returncode != 0 and "serviceAccount.name is required with serviceAccount.create false" in proc.stderr


def test_host_network_listens_on_ports_of_its_own_and_everything_follows(bin_dir, tmp_path):
    docs = render(bin_dir, tmp_path, {**EVERYTHING, "hostNetwork": True, "hostNetworkPorts": {"admission": 10300, "metrics": 10301}})
    spec = pods(docs)["serving"]
    assert (spec["hostNetwork"], spec["dnsPolicy"]) == (True, "ClusterFirstWithHostNet")
    assert {p["name"]: p["containerPort"] for p in spec["containers"][0]["ports"]} == {"https": 10300, "metrics": 10301}
    assert (config(docs)["server"]["port"], config(docs)["server"]["metricsPort"]) == (10300, 10301)
    # The Service and what the API server calls follow the named ports; the probes too.
    assert {p["name"]: (p["port"], p["targetPort"]) for p in one(docs, "Service")["spec"]["ports"]} == \
        {"https": (443, "https"), "metrics": (9090, "metrics")}
    assert {h["clientConfig"]["service"]["port"] for d in registered(docs) for h in d["webhooks"]} == {443}
    assert spec["containers"][0]["readinessProbe"]["httpGet"]["port"] == "https"
    assert [[p["port"] for p in r["ports"]] for r in one(docs, "NetworkPolicy")["spec"]["ingress"]] == [[10300], [10301]]
    assert "hostNetwork" not in pods(docs)["audit"]
    proc = render(bin_dir, tmp_path, {"hostNetwork": True, "hostNetworkPorts": {"admission": 10300, "metrics": 10300}}, check=False)
    assert proc.returncode != 0 and "hostNetworkPorts.metrics (10300) must differ from hostNetworkPorts.admission" in proc.stderr


def test_host_network_is_a_boolean_as_in_peer_charts(bin_dir):
    """`--set hostNetwork=true`, as Kyverno's, Gatekeeper's and cert-manager's charts take it; the
    ports default beside it; an object where the boolean stands is refused by the schema."""
    helm = os.path.join(bin_dir, "helm")
    proc = subprocess.run([helm, "template", RELEASE, CHART, "-n", NS, "--set", "hostNetwork=true"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    spec = one([d for d in yaml.safe_load_all(proc.stdout) if d], "Deployment")["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True
    assert {p["name"]: p["containerPort"] for p in spec["containers"][0]["ports"]} == {"https": 10270, "metrics": 10271}
    proc = subprocess.run([helm, "template", RELEASE, CHART, "-n", NS, "--set", "hostNetwork.enabled=true"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "hostNetwork" in proc.stderr, proc.stderr


def test_topology_spread_pdb_revision_history_and_probes(bin_dir, tmp_path):
    zone = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}
    own = {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
           "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": RELEASE}}}
    docs = render(bin_dir, tmp_path, {
        **EVERYTHING, "topologySpreadConstraints": [zone, own], "revisionHistoryLimit": 3,
        "podDisruptionBudget": {"maxUnavailable": 1},
        "probes": {"liveness": {"periodSeconds": 20, "failureThreshold": 5, "timeoutSeconds": 3},
                   "readiness": {"periodSeconds": 5, "initialDelaySeconds": 2}, "startup": {"failureThreshold": 90}}})
    deployment = one(docs, "Deployment")
    assert deployment["spec"]["template"]["spec"]["topologySpreadConstraints"] == [
        {**zone, "labelSelector": {"matchLabels": SERVING}}, own]     # the built-in one replaced
    assert deployment["spec"]["revisionHistoryLimit"] == 3
    assert one(docs, "PodDisruptionBudget")["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": SERVING}}
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"] == {"httpGet": {"path": "/healthz", "port": "https", "scheme": "HTTPS"},
                                          "periodSeconds": 20, "failureThreshold": 5, "timeoutSeconds": 3}
    assert container["readinessProbe"]["initialDelaySeconds"] == 2
    assert container["startupProbe"] == {"httpGet": {"path": "/healthz", "port": "https", "scheme": "HTTPS"},
                                         "periodSeconds": 2, "failureThreshold": 90}      # merged with the default
    # maxUnavailable as a percentage; the built-in spread off.
    docs = render(bin_dir, tmp_path, {"podDisruptionBudget": {"maxUnavailable": "50%"}, "topologySpread": {"enabled": False}})
    assert one(docs, "PodDisruptionBudget")["spec"]["maxUnavailable"] == "50%"
    assert "topologySpreadConstraints" not in one(docs, "Deployment")["spec"]["template"]["spec"]


def test_label_exemptions_are_anded_with_the_built_in_exclusion_everywhere(bin_dir, tmp_path):
    exempt = {"key": "workload-webhook.k8s.io/exempt", "operator": "DoesNotExist"}
    values = {"webhook": {"namespaceSelector": {"matchLabels": {"tier": "batch"}, "matchExpressions": [exempt]},
                          "objectSelector": {"matchExpressions": [exempt]}, "extraExcludedNamespaces": ["legacy"]},
              "config": {"targets": EVERYTHING["config"]["targets"]}}
    built_in = {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "legacy", NS]}
    want_ns = {"matchLabels": {"tier": "batch"}, "matchExpressions": [built_in, exempt]}
    docs = render(bin_dir, tmp_path, values)
    hooks = [h for d in registered(docs) for h in d["webhooks"]]      # what the serving Pods register
    assert len(hooks) == 4
    for hook in hooks:
        assert (hook["namespaceSelector"], hook["objectSelector"]) == (want_ns, {"matchExpressions": [exempt]}), hook["name"]
    membership = one(docs, "ValidatingAdmissionPolicy", f"{FULLNAME}-pod-membership")["spec"]["matchConstraints"]
    assert (membership["namespaceSelector"], membership["objectSelector"]) == (want_ns, {"matchExpressions": [exempt]})
    # url mode: the chart creates the configurations itself, with the same selectors.
    docs = render(bin_dir, tmp_path, {**values, "webhook": {**values["webhook"], "url": "https://wh.example.com"}})
    for hook in (h for d in docs if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]):
        assert hook["namespaceSelector"] == want_ns and hook["objectSelector"] == {"matchExpressions": [exempt]}
    proc = render(bin_dir, tmp_path, {"webhook": {"namespaceSelector": {"matchExpressions": [
        {"key": "x", "operator": "Maybe"}]}}}, check=False)
    assert proc.returncode != 0 and "/webhook/namespaceSelector/matchExpressions/0/operator" in proc.stderr


def test_service_monitor_namespace_relabelings_and_timeout(bin_dir, tmp_path):
    relabel = [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}]
    drop = [{"sourceLabels": ["__name__"], "regex": "workload_webhook_cluster_lookups_total", "action": "drop"}]
    tls = {"insecureSkipVerify": False, "ca": {"secret": {"name": "ww-ca-copy", "key": "ca.crt"}},
           "serverName": f"{FULLNAME}.{NS}.svc"}
    docs = render(bin_dir, tmp_path, {"serviceMonitor": {
        "enabled": True, "namespace": "monitoring", "scrapeTimeout": "10s", "relabelings": relabel,
        "metricRelabelings": drop, "tlsConfig": tls}})
    monitor = one(docs, "ServiceMonitor")
    assert monitor["metadata"]["namespace"] == "monitoring"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NS]}
    endpoint = monitor["spec"]["endpoints"][0]
    assert (endpoint["scrapeTimeout"], endpoint["relabelings"], endpoint["metricRelabelings"], endpoint["tlsConfig"]) == \
        ("10s", relabel, drop, tls)
    # Another namespace reads the CA there: without a tlsConfig of its own, a clear refusal.
    proc = render(bin_dir, tmp_path, {"serviceMonitor": {"enabled": True, "namespace": "monitoring"}}, check=False)
    assert proc.returncode != 0 and "set serviceMonitor.tlsConfig (or server.metricsTLS: false)" in proc.stderr
    docs = render(bin_dir, tmp_path, {"serviceMonitor": {"enabled": True, "namespace": "monitoring"},
                                      "server": {"metricsTLS": False}})
    assert one(docs, "ServiceMonitor")["spec"]["endpoints"][0]["scheme"] == "http"


def test_the_audit_job_schedules_where_it_is_told(bin_dir, tmp_path):
    knobs = {"nodeSelector": {"pool": "system"}, "priorityClassName": "low",
             "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}],
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                 {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}]}}}}
    spec = pods(render(bin_dir, tmp_path, {**EVERYTHING, "audit": {"enabled": True, **knobs}}))
    assert {k: spec["audit"][k] for k in knobs} == knobs
    serving = spec["serving"]
    assert not {"nodeSelector", "tolerations", "affinity", "priorityClassName"} & set(serving)


def test_events_grant_writing_events_only_when_enabled(bin_dir, tmp_path):
    def event_rules(docs):
        return [r for r in one(docs, "ClusterRole", FULLNAME)["rules"] if "events" in r.get("resources", [])]
    assert event_rules(render(bin_dir, tmp_path, {})) == []
    docs = render(bin_dir, tmp_path, {"events": {"enabled": True}})
    assert event_rules(docs) == [{"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
                                  "verbs": ["create", "patch"]}]
    assert config(docs)["events"] == {"enabled": True}


@pytest.mark.parametrize("values", [
    {"nameOverride": "x"}, {"fullnameOverride": "x"}, {"commonLabels": {"a": "b"}},
    {"image": {"registry": "r.example.com", "repository": "ww", "digest": "sha256:" + "0" * 64}},
    {"podSecurityContext": {"runAsNonRoot": True}}, {"securityContext": {"readOnlyRootFilesystem": True}},
    {"extraArgs": ["--x"]}, {"extraEnv": [{"name": "A", "value": "1"}]}, {"extraEnvFrom": [{"secretRef": {"name": "s"}}]},
    {"extraVolumes": [{"name": "v", "emptyDir": {}}]}, {"extraVolumeMounts": [{"name": "v", "mountPath": "/v"}]},
    {"serviceAccount": {"create": True, "name": "sa", "annotations": {"a": "b"}}},
    {"hostNetwork": True, "hostNetworkPorts": {"admission": 10270, "metrics": 10271}},
    {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "ScheduleAnyway"}]},
    {"podDisruptionBudget": {"maxUnavailable": 1}}, {"revisionHistoryLimit": 2},
    {"probes": {"liveness": {"timeoutSeconds": 2}}},
    {"webhook": {"namespaceSelector": {"matchLabels": {"a": "b"}}, "objectSelector": {"matchLabels": {"a": "b"}}}},
    {"serviceMonitor": {"enabled": True, "relabelings": [], "metricRelabelings": [], "scrapeTimeout": "5s"}},
    {"audit": {"enabled": True, "nodeSelector": {"a": "b"}, "tolerations": [], "affinity": {}, "priorityClassName": "p"}},
    {"events": {"enabled": True}}, {"prometheusRule": {"enabled": True}}, {"grafanaDashboard": {"enabled": True}},
], ids=lambda v: ",".join(v))
def test_each_knob_passes_the_schema_and_helm_lint_strict(bin_dir, tmp_path, values):
    render(bin_dir, tmp_path, values)
    path = tmp_path / "lint.yaml"
    path.write_text(yaml.safe_dump(values))
    proc = subprocess.run([os.path.join(bin_dir, "helm"), "lint", "--strict", CHART, "-f", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "0 chart(s) failed" in proc.stdout, proc.stdout + proc.stderr
