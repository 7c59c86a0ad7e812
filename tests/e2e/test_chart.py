"""The Helm chart against the real API server: every certificate mode renders
and is accepted; an install in url mode (the service running locally with the
chart's own configuration and its ServiceAccount's token) enforces, survives
an upgrade and certificate rotation with zero failed admission requests, and
leaves nothing behind on uninstall."""
from __future__ import annotations

import base64
import copy
import http.client
import json
import os
import subprocess
import sys
import threading
import time

import pytest
import yaml
from cryptography import x509

from tests.e2e.rest import token_kubeconfig
from tests.server.harness import REPO, PortTaken, Server
from webhook import config as config_mod
from webhook.registration import Endpoint, configurations

CHART = os.path.join(REPO, "charts", "workload-webhook")
NS = "ww-chart"
RELEASE = "wwc"
FULLNAME = "wwc-workload-webhook"
SA = f"system:serviceaccount:{NS}:{FULLNAME}"
TRAINJOB_TARGET = {"group": "training.example.com", "kind": "TrainJob", "versions": ["v1alpha1"],
                   "groups": [{"schedulingPolicy": "spec.scheduling.schedulingPolicy",
                               "disruptionMode": "spec.scheduling.disruptionMode", "size": "spec.replicas"}]}
EVALJOB_TARGET = {**TRAINJOB_TARGET, "kind": "EvalJob"}
ALL_GATES = {g: True for g in ("GenericWorkload", "TopologyAwareWorkloadScheduling", "DRAWorkloadResourceClaims",
                               "CompositePodGroup", "PodGroupPreemptionPolicy")}
MODES = {
    "default": [],
    "self-url": ["--set", "webhook.url=https://127.0.0.1:9443"],
    "certManager": ["--set", "certificates.mode=certManager"],
    "certManager-issuer": ["--set", "certificates.mode=certManager", "--set", "certificates.certManager.issuerRef.name=corp",
                           "--set", "certificates.certManager.issuerRef.kind=ClusterIssuer"],
    "provided": ["--set", "certificates.mode=provided", "--set", "certificates.provided.secretName=my-tls",
                 "--set", "certificates.provided.caBundle=-----BEGIN CERTIFICATE-----"],
    "extras": ["--set", "networkPolicy.enabled=true", "--set", "serviceMonitor.enabled=true",
               "--set", "priorityClassName=system-cluster-critical"],
}
NO_CRD_HERE = ("cert-manager.io/", "monitoring.coreos.com/")   # kinds whose CRDs this test cluster lacks


def helm(cluster, *args, check=True, timeout=120):
    proc = subprocess.run([cluster.helm, "--kubeconfig", cluster.kubeconfig("admin"), *args],
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def values_file(tmp_path, **values) -> str:
    path = tmp_path / f"values-{len(os.listdir(tmp_path))}.yaml"
    path.write_text(yaml.safe_dump(values))
    return str(path)


def rendered(cluster, tmp_path, *extra) -> list[dict]:
    profiles = ["jobset", "leaderworkerset", {"name": "job-template", "group": "example.com", "kind": "CronTrainJob",
                                              "versions": ["v1"], "jobSpec": "spec.jobTemplate.spec"}]
    vals = values_file(tmp_path, config={"targets": [TRAINJOB_TARGET], "featureGates": ALL_GATES, "profiles": profiles,
                                         "enforcement": {"rules": {"POD-3": "warn", "DIS-2": "audit"}},
                                         "bridge": {"coscheduling": True, "volcano": True,
                                                    "schedulerNames": ["volcano", "scheduler-plugins-scheduler"]}})
    out = helm(cluster, "template", RELEASE, CHART, "-n", NS, "-f", vals, *extra).stdout
    return [d for d in yaml.safe_load_all(out) if d]


@pytest.mark.parametrize("mode", list(MODES))
def test_lint_template_and_server_dry_run(cluster, kubectl, tmp_path, mode):
    kubectl("create", "namespace", NS, check=False)
    helm(cluster, "lint", CHART, *MODES[mode])
    docs = rendered(cluster, tmp_path, *MODES[mode])
    hooks_kinds = {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
    if "webhook.url=https://127.0.0.1:9443" not in MODES[mode]:
        # Service mode: the Pods register the configurations the ConfigMap carries, once they are ready.
        assert not hooks_kinds & {d["kind"] for d in docs}
        cm = next(d for d in docs if d["kind"] == "ConfigMap")
        docs += [d for d in yaml.safe_load_all(cm["data"]["webhooks.yaml"]) if d]
        assert cm["data"]["revision"] == "1"
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "Service", "ConfigMap", "ServiceAccount", "ClusterRole", "PodDisruptionBudget"} | hooks_kinds \
        <= kinds
    # `helm test`: the check Pod and its least-privilege RBAC are hooks, not release resources.
    tests = [d for d in docs if ((d.get("metadata") or {}).get("annotations") or {}).get("helm.sh/hook") == "test"]
    check_pod = next(d for d in tests if d["kind"] == "Pod")
    assert check_pod["spec"]["containers"][0]["args"][0] == "check"
    docs = [d for d in docs if d not in tests]
    checkable = [d for d in docs if not d["apiVersion"].startswith(NO_CRD_HERE)]
    proc = kubectl("apply", "--dry-run=server", "-n", NS, "-f", "-", stdin=yaml.safe_dump_all(checkable), check=False)
    assert proc.returncode == 0, proc.stderr
    if mode.startswith("certManager"):
        certificates = [d for d in docs if d["kind"] == "Certificate"]
        serving = next(c for c in certificates if c["metadata"]["name"] == f"{FULLNAME}-serving")
        assert serving["spec"]["secretName"] == f"{FULLNAME}-tls" and f"{FULLNAME}.{NS}.svc" in serving["spec"]["dnsNames"]
        hooks = [d for d in docs if d["kind"].endswith("WebhookConfiguration")]
        assert all(h["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NS}/{FULLNAME}-serving" for h in hooks)
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    sc = deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    assert sc == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "privileged": False,
                  "capabilities": {"drop": ["ALL"]}}
    assert deployment["spec"]["template"]["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


def test_bad_values_are_refused(cluster):
    proc = helm(cluster, "template", RELEASE, CHART, "--set", "certificates.mode=vault", check=False)
    assert proc.returncode != 0 and "certificates" in proc.stderr
    # A config typo fails the install naming its path (the service's own config schema), not Pods in a crash loop.
    proc = helm(cluster, "template", RELEASE, CHART, "--set", "config.pods.onMisingPodGroup=x", check=False)
    assert proc.returncode != 0 and "/config/pods" in proc.stderr and "onMisingPodGroup" in proc.stderr
    # As a subchart: a parent's `global` values are accepted.
    helm(cluster, "template", RELEASE, CHART, "--set", "global.imageRegistry=registry.invalid")


def test_chart_config_is_what_the_service_loads_and_webhooks_match_the_service(cluster, tmp_path):
    docs = rendered(cluster, tmp_path, "--set", "webhook.url=https://127.0.0.1:9443")
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    cfg = config_mod.from_dict(yaml.safe_load(cm["data"]["config.yaml"]))       # the service accepts it
    assert cfg.certificates.mode == "secret" and cfg.certificates.secret == f"{NS}/{FULLNAME}-tls"
    expected = configurations(cfg, Endpoint(b"x", url="https://127.0.0.1:9443"), name=FULLNAME, namespace=NS)

    def essence(doc):
        return [{k: v for k, v in h.items() if k != "clientConfig"} | {"url": h["clientConfig"].get("url")}
                for h in doc["webhooks"]]
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        chart_doc = next(d for d in docs if d["kind"] == kind)
        ours = next(d for d in expected if d["kind"] == kind)
        assert essence(chart_doc) == essence(ours), kind
    # The Pod membership policy (webhook/vap/pod_membership.py) and its binding, as the chart renders them.
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        chart_doc = next(d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith("-pod-membership"))
        ours = next(d for d in expected if d["kind"] == kind)
        assert (chart_doc["metadata"]["name"], chart_doc["spec"]) == (ours["metadata"]["name"], ours["spec"]), kind


# ---------------------------------------------------------------- install in url mode

class AdmissionLoop:
    """A steady loop of server-side dry-run TrainJob creations through the API
    server (so every request is an admission call to the webhook). Bounded."""

    def __init__(self, cluster, namespace, max_seconds=120):
        self.cluster, self.namespace, self.max_seconds = cluster, namespace, max_seconds
        self.results: list[tuple[float, int, str]] = []
        self._stop = threading.Event()

    def _one(self, conn, bad: bool) -> tuple[int, str]:
        sched = {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}} if bad else \
            {"schedulingPolicy": {"gang": {"minCount": 1}}}
        obj = {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob",
               "metadata": {"generateName": "loop-"}, "spec": {"replicas": 1, "scheduling": sched}}
        conn.request("POST", f"/apis/training.example.com/v1alpha1/namespaces/{self.namespace}/trainjobs?dryRun=All",
                     json.dumps(obj), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")[:300]

    def _run(self):
        deadline = time.monotonic() + self.max_seconds
        conn = http.client.HTTPSConnection("127.0.0.1", self.cluster.port, context=self.cluster.ssl_context("admin"),
                                           timeout=15)
        bad = False
        while not self._stop.is_set() and time.monotonic() < deadline:
            bad = not bad
            try:
                status, body = self._one(conn, bad)
            except (OSError, http.client.HTTPException) as exc:
                status, body = -1, repr(exc)
                conn.close()
            self.results.append((time.monotonic(), status if status != (422 if bad else 201) else 0, body))
            time.sleep(0.05)
        conn.close()

    def failures(self):
        return [r for r in self.results if r[1] != 0]

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.thread.join(30)


def sa_kubeconfig(cluster, kubectl, path) -> str:
    return token_kubeconfig(cluster, kubectl, FULLNAME, NS, path)


def can(kubectl, *args) -> bool:
    return kubectl("auth", "can-i", *args, "--as", SA, check=False).stdout.strip() == "yes"


def secret_ca(kubectl) -> bytes:
    data = kubectl.get("secret", f"{FULLNAME}-tls", NS).get("data") or {}
    return base64.b64decode(data.get("ca-signing.crt", ""))


def local_service(cluster, workdir, kubectl, kubeconfig, port) -> tuple[Server, int]:
    """The chart's service, run here on the port its webhook URL names. If another
    process took that port meanwhile, the release is pointed at a new one."""
    for _ in range(3):
        server = _service_on(workdir, kubectl, kubeconfig, port)
        try:
            return server.start(), port
        except PortTaken:
            port = Server(workdir).port
            helm(cluster, "upgrade", RELEASE, CHART, "-n", NS, "--reuse-values",
                 "--set", f"webhook.url=https://127.0.0.1:{port}")
    raise RuntimeError("no free port for the chart's service in 3 attempts")


def _service_on(workdir, kubectl, kubeconfig, port) -> Server:
    os.makedirs(workdir, exist_ok=True)
    config_path = os.path.join(workdir, "chart-config.yaml")
    with open(config_path, "w") as f:
        f.write(kubectl("get", "configmap", FULLNAME, "-n", NS, "-o", "jsonpath={.data.config\\.yaml}").stdout)
    server = Server(workdir, config=config_path, extra=["--cluster", "kubeconfig", "--kubeconfig", kubeconfig,
                                                        "--bind-address", "127.0.0.1"])
    server.port, server.port_fixed = port, True      # the chart registered this URL
    server.args[server.args.index("--port") + 1] = str(port)
    return server


def test_install_upgrade_rotate_uninstall(cluster, kubectl, crds, webhook, tmp_path):
    # The session's own registration would answer too: step it aside for this test.
    kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "workload-webhook")
    kubectl("create", "namespace", NS, check=False)
    evaljob_crd = open(os.path.join(REPO, "examples", "crds", "trainjob.yaml")).read() \
        .replace("trainjobs", "evaljobs").replace("TrainJobList", "EvalJobList").replace("TrainJob", "EvalJob") \
        .replace("trainjob", "evaljob")
    kubectl("apply", "-f", "-", stdin=evaljob_crd)
    kubectl("wait", "--for=condition=Established", "crd/evaljobs.training.example.com", "--timeout=60s")
    kubectl("create", "namespace", "chart-tenant", check=False)
    server = None
    try:
        port = Server(str(tmp_path)).port
        short = {"caValiditySeconds": 45, "leafValiditySeconds": 24, "graceSeconds": 5, "checkIntervalSeconds": 1}
        vals = values_file(tmp_path, webhook={"url": f"https://127.0.0.1:{port}"},
                           certificates={"mode": "self", "self": short},
                           config={"targets": [TRAINJOB_TARGET]})     # the chart's default gates: none set
        helm(cluster, "install", RELEASE, CHART, "-n", NS, "-f", vals)

        # Least privilege, checked by the API server's own authorizer.
        assert can(kubectl, "watch", "podgroups.scheduling.k8s.io", "--all-namespaces")
        assert can(kubectl, "get", "workloads.scheduling.k8s.io", "--all-namespaces")
        assert not can(kubectl, "list", "workloads.scheduling.k8s.io", "--all-namespaces")   # read on demand
        assert can(kubectl, "get", "/metrics")            # the cluster's feature gates
        assert can(kubectl, "update", f"secret/{FULLNAME}-tls", "-n", NS)
        assert can(kubectl, "patch", f"validatingwebhookconfigurations/{FULLNAME}")
        assert can(kubectl, "patch", f"mutatingwebhookconfigurations/{FULLNAME}")
        for denied in (["get", "secrets", "-n", NS], ["get", "secret/other", "-n", NS], ["create", "secrets", "-n", NS],
                       ["get", f"secret/{FULLNAME}-tls", "-n", "kube-system"], ["list", "secrets", "--all-namespaces"],
                       ["patch", "validatingwebhookconfigurations/someone-else"], ["delete", "podgroups.scheduling.k8s.io"],
                       ["create", "pods", "-n", NS], ["update", "workloads.scheduling.k8s.io"], ["*", "*"]):
            assert not can(kubectl, *denied), denied

        kubeconfig = sa_kubeconfig(cluster, kubectl, tmp_path / "sa.kubeconfig")
        server, port = local_service(cluster, str(tmp_path / "svc1"), kubectl, kubeconfig, port)
        first_ca = secret_ca(kubectl)
        assert first_ca, "the service did not fill the chart's Secret"
        hook = json.loads(kubectl("get", "validatingwebhookconfiguration", FULLNAME, "-o", "json").stdout)
        assert all(h["clientConfig"].get("caBundle") for h in hook["webhooks"])

        bad = {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob", "metadata": {"name": "bad", "namespace": "chart-tenant"},
               "spec": {"replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}}
        proc = kubectl.apply(bad, check=False)
        assert proc.returncode != 0 and "spec.scheduling.disruptionMode" in proc.stderr

        # The chart's default values on a cluster with every gate on: the gates come from the cluster, so the
        # PodGroup the API server defaults spec.preemptionPolicy on (as the Job controller's) is admitted.
        assert "feature gates from the API server" in server.log() and "PodGroupPreemptionPolicy=on" in server.log()
        for name, extra in (("pg-defaulted", {}), ("pg-explicit", {"preemptionPolicy": "PreemptLowerPriority"})):
            pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                  "metadata": {"name": name, "namespace": "chart-tenant"},
                  "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **extra}}
            proc = kubectl.create(pg, check=False)
            assert proc.returncode == 0, proc.stderr
            assert kubectl.get("podgroup", name, "chart-tenant")["spec"].get("preemptionPolicy")

        # Certificate rotation (CA and serving certificate) under a steady loop of admission calls.
        leaf_serials = set()
        with AdmissionLoop(cluster, "chart-tenant", max_seconds=90) as loop:
            deadline = time.monotonic() + 75
            while time.monotonic() < deadline:
                conn = server.connection()
                conn.connect()
                leaf_serials.add(x509.load_der_x509_certificate(conn.sock.getpeercert(binary_form=True)).serial_number)
                conn.close()
                if secret_ca(kubectl) != first_ca and len(leaf_serials) >= 3 and \
                        len(x509.load_pem_x509_certificates(base64.b64decode(
                            kubectl.get("secret", f"{FULLNAME}-tls", NS)["data"]["ca.crt"]))) == 1:
                    break
                time.sleep(1)
        assert secret_ca(kubectl) != first_ca, "the CA never rotated"
        assert len(leaf_serials) >= 3, "the serving certificate never rotated"
        assert len(loop.results) > 100
        assert loop.failures() == [], loop.failures()[:3]

        # helm upgrade adding a target: enforcement stays continuous (the caBundle survives the upgrade).
        vals2 = values_file(tmp_path, webhook={"url": f"https://127.0.0.1:{port}"},
                            certificates={"mode": "self", "self": short},
                            config={"targets": [TRAINJOB_TARGET, EVALJOB_TARGET], "featureGates": ALL_GATES})
        with AdmissionLoop(cluster, "chart-tenant", max_seconds=60) as loop:
            time.sleep(2)
            helm(cluster, "upgrade", RELEASE, CHART, "-n", NS, "-f", vals2)
            time.sleep(3)
        assert len(loop.results) > 20 and loop.failures() == [], loop.failures()[:3]
        # The rollout: the service restarts with the upgraded configuration.
        server.stop()
        server, port = local_service(cluster, str(tmp_path / "svc2"), kubectl, kubeconfig, port)
        bad_eval = copy.deepcopy(bad) | {"kind": "EvalJob"}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            proc = kubectl.apply(bad_eval, "--dry-run=server", check=False)
            if proc.returncode != 0:
                break
            time.sleep(1)
        assert proc.returncode != 0 and "spec.scheduling.disruptionMode" in proc.stderr

        # Uninstall leaves no webhook configuration behind; Pods are created as before.
        helm(cluster, "uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "60s")
        for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
            assert not kubectl("get", kind, FULLNAME, "--ignore-not-found", "-o", "name").stdout.strip()
        assert not kubectl.exists("secret", f"{FULLNAME}-tls", NS)
        server.stop()
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "after", "namespace": "chart-tenant",
                                                               "labels": {"scheduling.k8s.io/pod-group": "g"}},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        kubectl.apply(pod)
    finally:
        if server:
            server.stop()
        helm(cluster, "uninstall", RELEASE, "-n", NS, check=False)
        webhook.register()


def test_vap_values_render_what_the_service_registers(cluster, tmp_path):
    """`vap --helm-values --mode replace` into the chart: the same policies and bindings, and the
    same webhook rules (TrainJob no longer sent to /validate), as `webhook-configs` with vap on."""
    config = {"targets": [TRAINJOB_TARGET], "featureGates": ALL_GATES}
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "webhook", "vap", "--config", str(cfg_file), "--helm-values",
                           "--mode", "replace", "--name", FULLNAME, "--namespace", NS], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    vap_values = tmp_path / "vap.yaml"
    vap_values.write_text(proc.stdout)
    vals = values_file(tmp_path, config=config)
    out = helm(cluster, "template", RELEASE, CHART, "-n", NS, "-f", vals, "-f", str(vap_values),
               "--set", "webhook.url=https://127.0.0.1:9443").stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    cfg = config_mod.from_dict({**config, "vap": {"enabled": True, "mode": "replace"}})
    expected = configurations(cfg, Endpoint(b"x", url="https://127.0.0.1:9443"), name=FULLNAME, namespace=NS)
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        ours = sorted((d["metadata"]["name"], json.dumps(d["spec"], sort_keys=True)) for d in expected if d["kind"] == kind)
        chart = sorted((d["metadata"]["name"], json.dumps(d["spec"], sort_keys=True)) for d in docs if d["kind"] == kind
                       and not d["metadata"]["name"].endswith("-registration"))    # the chart's own (registrationpolicy.yaml)
        assert chart == ours and len(ours) == 2, kind
    hooks = next(d for d in docs if d["kind"] == "ValidatingWebhookConfiguration")["webhooks"]
    assert [h["name"] for h in hooks] == [h["name"] for h in next(
        d for d in expected if d["kind"] == "ValidatingWebhookConfiguration")["webhooks"]]
    assert not any("targets.validate" in h["name"] for h in hooks)


# ---------------------------------------------------------------- what a stolen ServiceAccount token can do

def hook_attempts(fullname: str, namespace: str) -> list[tuple[str, dict, str]]:
    """(what, configuration, the refusal's words): what a token of the release's ServiceAccount
    might register. RBAC lets it create any webhook configuration (create cannot be limited
    by name); the release's ValidatingAdmissionPolicy refuses each of these."""
    own = {"name": fullname, "namespace": namespace, "path": "/validate", "port": 443}

    def config(name, rules, kind="ValidatingWebhookConfiguration", service=own, selector=True, conditions=None):
        hook = {"name": "x.validate.workload-webhook.k8s.io", "clientConfig": {"service": service, "caBundle": "eA=="},
                "rules": rules, "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Ignore"}
        if selector:
            hook["namespaceSelector"] = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                               "values": ["kube-system", namespace]}]}
        if conditions:
            hook["matchConditions"] = conditions
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
                "webhooks": [hook]}

    def rule(groups, resources):
        return [{"apiGroups": groups, "apiVersions": ["*"], "resources": resources, "operations": ["CREATE", "UPDATE"]}]
    pods = rule([""], ["pods"])
    return [
        ("a webhook for Secrets under another name", config("steal", rule([""], ["secrets"])),
         f"may write only the webhook configurations named {fullname}"),
        ("a webhook for Secrets under the release's name", config(fullname, rule([""], ["secrets"])),
         "a rule of the core API group may name only pods"),
        ("every resource of every group", config(fullname, rule(["*"], ["*"])), "every rule must stay within the API groups"),
        ("a wildcard in a target's group", config(fullname, rule(["training.example.com"], ["*"])),
         "no rule may name a wildcard resource"),
        ("PriorityClasses of scheduling.k8s.io", config(fullname, rule(["scheduling.k8s.io"], ["priorityclasses"])),
         "a rule of scheduling.k8s.io may name only"),
        ("every Pod, without the pod-group condition", config(fullname, pods, "MutatingWebhookConfiguration"),
         "a Pod webhook must keep the condition"),
        ("kube-system included", config(fullname, rule(["scheduling.k8s.io"], ["podgroups"]), selector=False),
         "every webhook must leave the namespaces kube-system"),
        ("another Service", config(fullname, rule(["scheduling.k8s.io"], ["podgroups"]),
                                   service={**own, "name": "evil", "namespace": "default"}),
         "every webhook must call the release's own Service"),
    ]


def token_kubectl(cluster, kubeconfig: str):
    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([cluster.kubectl, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True,
                              text=True, timeout=60)
    return run


def test_a_stolen_service_account_token_cannot_register_other_webhooks(cluster, kubectl, tmp_path):
    """Issue 27 point 5, on the plain control plane (the same on the real node: test_chart_node.py).
    The chart in Service mode (its Pods never run here: no node); a token of its ServiceAccount."""
    ns, release, full = "ww-policy", "wwp", "wwp-workload-webhook"
    kubectl("create", "namespace", ns, check=False)
    helm(cluster, "install", release, CHART, "-n", ns, "-f", values_file(tmp_path, config={"targets": [TRAINJOB_TARGET]}))
    try:
        policy = f"{full}-registration"      # (its type check is kube-controller-manager's: on the real node)
        as_sa = token_kubectl(cluster, token_kubeconfig(cluster, kubectl, full, ns, tmp_path / "sa.kubeconfig"))
        assert as_sa("auth", "can-i", "create", "validatingwebhookconfigurations").stdout.strip() == "yes"  # RBAC alone
        attempts = hook_attempts(full, ns)
        # The API server enforces a new policy a moment after it exists: a dry run shows when.
        _wait_for(lambda: "denied request" in as_sa("create", "--dry-run=server", "-f", "-",
                                                   stdin=yaml.safe_dump(attempts[0][1])).stderr, "the policy enforced")
        for what, doc, words in attempts:
            proc = as_sa("create", "-f", "-", stdin=yaml.safe_dump(doc))
            assert proc.returncode != 0 and "denied request" in proc.stderr and words in proc.stderr, (what, proc.stderr)
        assert not kubectl("get", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "-o", "name").stdout \
            .count(full) and "steal" not in kubectl("get", "validatingwebhookconfiguration", "-o", "name").stdout
        # What the serving Pods register (the ConfigMap's webhooks.yaml) is admitted, and a caBundle patch too.
        legit = [d for d in yaml.safe_load_all(kubectl("get", "configmap", full, "-n", ns, "-o",
                                                        "jsonpath={.data.webhooks\\.yaml}").stdout) if d]
        proc = as_sa("create", "-f", "-", stdin=yaml.safe_dump_all(legit))
        assert proc.returncode == 0, proc.stderr
        patch = json.dumps([{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "eA=="}])
        proc = as_sa("patch", "validatingwebhookconfiguration", full, "--type=json", "-p", patch)
        assert proc.returncode == 0, proc.stderr
        # An update may not widen it either.
        widened = json.loads(kubectl("get", "validatingwebhookconfiguration", full, "-o", "json").stdout)
        widened["webhooks"][0]["rules"].append({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["secrets"],
                                                "operations": ["CREATE"]})
        proc = as_sa("replace", "-f", "-", stdin=json.dumps(widened))
        assert proc.returncode != 0 and "a rule of the core API group may name only pods" in proc.stderr, proc.stderr
        # What RBAC can say, it says: no delete, no one else's configuration, no policy of its own.
        for verb, what in (("delete", f"validatingwebhookconfiguration/{full}"), ("update", "validatingwebhookconfiguration/other"),
                           ("create", "validatingadmissionpolicies"), ("delete", f"validatingadmissionpolicy/{policy}"),
                           ("create", "mutatingadmissionpolicies")):
            assert as_sa("auth", "can-i", verb, what).stdout.strip() == "no", (verb, what)
        proc = as_sa("delete", "validatingwebhookconfiguration", full)
        assert proc.returncode != 0 and "forbidden" in proc.stderr
        # The policy binds that one user: an administrator still registers what they like.
        kubectl.create(attempts[0][1])
        kubectl("delete", "validatingwebhookconfiguration", "steal")
    finally:
        helm(cluster, "uninstall", release, "-n", ns, check=False)
        kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", full, "steal",
                "--ignore-not-found", check=False)


def _wait_for(check, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")
