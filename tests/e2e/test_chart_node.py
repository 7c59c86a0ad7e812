"""The chart installed for real (issue 19): `helm install --wait` on a real kubelet and
containerd (tests/e2e/node.py) with the image built from the repository's Dockerfile
(hack/build-images.sh), default certificate mode `self`, two replicas. The API server
calls the webhook through its Service; kubectl inside the node's namespace shows
enforcement, dry-run and Pod membership; the Pods run as the chart says; with every
gate on in the cluster and the chart's default values (no config.featureGates), every
upstream-valid case is admitted (issue 19, point 6), and the chart's audit CronJob, run
once, finds no violation in the upstream-valid objects stored (issue 28, point 4);
uninstall leaves nothing of the release.
The rest of the chart's life is in test_chart_node_install.py (certificate mode provided,
releases that cannot become Ready) and test_chart_node_rollout.py (rotation, upgrades, replica loss).

The webhook configurations may be created by the chart or registered by the serving
Pods once they serve (then owned by the release's ClusterRole and removed by the
garbage collector): the tests wait for them either way."""
from __future__ import annotations

import copy
import glob
import json
import os
import time

import pytest
import yaml

from tests.e2e import summary
from tests.e2e.test_agreement import PLURALS, exclusion, versions
from tests.e2e.rest import token_kubeconfig
from tests.e2e.test_chart import ALL_GATES, CHART, TRAINJOB_TARGET, hook_attempts
from tests.e2e.test_rollout import glob_reports
from webhook.cluster.registrar import ANNOTATION_REVISION
from tests.server.harness import REPO
from tests.unit.helpers import pod, podgroup
from tests.unit.test_upstream_cases import CASES

NS = "ww-node"
TENANT = "ww-tenant"
RELEASE = "wwn"
FULLNAME = f"{RELEASE}-workload-webhook"
LABEL = "scheduling.k8s.io/pod-group"
GPU = {"name": "gpu", "resourceClaimTemplateName": "gpus"}
HOOK_KINDS = ("validatingwebhookconfiguration", "mutatingwebhookconfiguration")
POLICY_KINDS = ("validatingadmissionpolicy", "validatingadmissionpolicybinding")


def bad_trainjob(name: str = "bad") -> dict:
    return {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": TENANT},
            "spec": {"replicas": 1, "scheduling": {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}}}


def in_ns(obj: dict, namespace: str) -> dict:
    return {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}


def wait_for(what: str, check, node, timeout: float = 60, interval: float = 0.5, namespace: str = NS):
    """``check()`` until truthy (returned), or fail naming ``what`` with the node's logs."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"{what}: not within {timeout:.0f} s (last: {last!r})\n{node.diagnose(namespace)}", pytrace=False)


def names(node, kind: str, namespace: str | None = None) -> list[str]:
    scope = ["-n", namespace] if namespace else []
    out = node.kubectl("get", kind, *scope, "-o", "jsonpath={.items[*].metadata.name}").stdout
    return out.split()


def release_objects(node, kind: str, namespace: str | None = None) -> list[str]:
    ours = (FULLNAME, f"sh.helm.release.v1.{RELEASE}.")      # its objects and helm's release records
    return [n for n in names(node, kind, namespace) if n.startswith(ours)]


@pytest.fixture(scope="module")
def release(real_node, images, tmp_path_factory):
    node = real_node
    node.kubectl("apply", "-f", os.path.join(REPO, "examples", "crds", "trainjob.yaml"))
    node.kubectl("wait", "--for=condition=Established", "crd/trainjobs.training.example.com", "--timeout=60s")
    node.kubectl("create", "namespace", TENANT)
    repository, tag = images["WEBHOOK_IMAGE"].rsplit(":", 1)
    values = tmp_path_factory.mktemp("chart-node") / "values.yaml"
    values.write_text(yaml.safe_dump({
        # The chart's short name resolves to the imported docker.io/library/... image; Never:
        # a missing image fails at once (ErrImageNeverPull) instead of trying a registry.
        "image": {"repository": repository.removeprefix("docker.io/library/"), "tag": tag, "pullPolicy": "Never"},
        "replicaCount": 2,
        "config": {"targets": [TRAINJOB_TARGET]},
        "tests": {"timeoutSeconds": 15},         # the failing `helm test` below gives up after this
        # The audit CronJob, run on demand by its test (a schedule that never fires during a run).
        "audit": {"enabled": True, "schedule": "0 0 1 1 *"},
    }))
    t0 = time.monotonic()
    proc = node.helm("install", RELEASE, CHART, "-n", NS, "--create-namespace", "-f", str(values),
                     "--wait", "--timeout", "120s", check=False, timeout=180)
    took = time.monotonic() - t0
    if proc.returncode != 0:
        pytest.fail(f"helm install --wait failed after {took:.1f} s:\n{proc.stderr[-3000:]}\n{node.diagnose(NS)}",
                    pytrace=False)
    node.timings["helm install --wait"] = took
    # Registered by the chart or by the serving Pods: both must exist, with a caBundle.
    for kind in HOOK_KINDS:
        wait_for(f"{kind} {FULLNAME} with a caBundle", lambda: all(
            h.get("clientConfig", {}).get("caBundle") for h in json.loads(node.kubectl(
                "get", kind, FULLNAME, "-o", "json", check=False).stdout or "{}").get("webhooks") or [{}]), node)
    # The API server picks registrations up asynchronously: wait until it calls the webhook.
    wait_for("the API server calling the webhook", lambda: "(DIS-2)" in node.kubectl(
        "create", "-f", "-", "--dry-run=server", input=yaml.safe_dump(bad_trainjob("probe")), check=False).stderr,
        node, interval=1)
    node.timings["webhook called after install"] = time.monotonic() - t0
    yield node
    node.helm("uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "60s", check=False)


def test_trainjob_disruption_all_with_basic_is_refused_naming_DIS_2(release):
    proc = release.kubectl("apply", "-f", "-", input=yaml.safe_dump(bad_trainjob()), check=False)
    assert proc.returncode != 0, proc.stdout
    assert "(DIS-2)" in proc.stderr and "spec.scheduling.disruptionMode" in proc.stderr, proc.stderr
    assert release.kubectl("get", "trainjob", "bad", "-n", TENANT, "--ignore-not-found", "-o", "name").stdout == ""


def test_server_dry_run_gives_the_same_refusal(release):
    real = release.kubectl("create", "-f", "-", input=yaml.safe_dump(bad_trainjob()), check=False)
    dry = release.kubectl("create", "-f", "-", "--dry-run=server", input=yaml.safe_dump(bad_trainjob()), check=False)
    assert dry.returncode != 0 and "(DIS-2)" in dry.stderr, dry.stderr
    assert dry.stderr.strip() == real.stderr.strip()
    good = bad_trainjob("good")
    good["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": 1}}}
    release.kubectl("create", "-f", "-", "--dry-run=server", input=yaml.safe_dump(good))


def test_a_labelled_pod_joins_its_podgroup_with_the_groups_claims(release, images):
    release.kubectl("apply", "-f", "-", input=yaml.safe_dump(in_ns(podgroup("train-0", resourceClaims=[GPU]), TENANT)))
    member = in_ns(pod({LABEL: "train-0"}), TENANT)
    # Never runs: the gang (minCount 2) waits for a second Pod, and the claim's template is absent.
    member["spec"]["containers"][0].update(image=images["PAUSE_IMAGE"], imagePullPolicy="Never")
    text = yaml.safe_dump(member)
    # The webhook's watch cache may not have the PodGroup yet: a dry-run shows when it does.
    wait_for("the webhook seeing PodGroup train-0", lambda: yaml.safe_load(release.kubectl(
        "create", "-f", "-", "--dry-run=server", "-o", "yaml", input=text).stdout)["spec"].get("resourceClaims"),
        release, namespace=TENANT)
    release.kubectl("create", "-f", "-", input=text)
    stored = json.loads(release.kubectl("get", "pod", "p", "-n", TENANT, "-o", "json").stdout)
    assert stored["spec"]["schedulingGroup"] == {"podGroupName": "train-0"}
    assert stored["spec"]["resourceClaims"] == [GPU]      # (the chart's claimsToContainers: none)


def test_the_pods_run_as_the_chart_says_and_are_ready(release):
    pods = json.loads(release.kubectl("get", "pods", "-n", NS, "-l", f"app.kubernetes.io/instance={RELEASE}",
                                      "-o", "json").stdout)["items"]
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
    for p in pods:
        spec, c = p["spec"], p["spec"]["containers"][0]
        assert p["spec"]["nodeName"] == "ww-node"
        assert spec["securityContext"]["runAsUser"] == 65532 and spec["securityContext"]["runAsNonRoot"] is True
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert (c["livenessProbe"]["httpGet"], c["readinessProbe"]["httpGet"], c["startupProbe"]["httpGet"]) == (
            {"path": "/healthz", "port": "https", "scheme": "HTTPS"},
            {"path": "/readyz", "port": "https", "scheme": "HTTPS"},
            {"path": "/healthz", "port": "https", "scheme": "HTTPS"})
        ready = {x["type"]: x["status"] for x in p["status"]["conditions"]}
        assert ready.get("Ready") == "True" and p["status"]["containerStatuses"][0]["restartCount"] == 0, p["status"]
        # What the process really is, asked inside the running container (API server -> kubelet -> containerd).
        probe = ("import os\ntry:\n open('/x', 'w')\nexcept OSError as e:\n print(os.getuid(), os.getgid(), e.errno)")
        out = release.kubectl("exec", "-n", NS, p["metadata"]["name"], "--", "python3", "-c", probe).stdout.split()
        assert out == ["65532", "65532", "30"], out          # 30: EROFS, the root file system is read-only


def test_helm_test_proves_the_healthy_release(release):
    t0 = time.monotonic()
    proc = release.helm("test", RELEASE, "-n", NS, "--timeout", "120s", check=False, timeout=180)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{release.diagnose(NS)}"
    release.timings["helm test"] = time.monotonic() - t0


# The upstream cases test_agreement.py judges (its exclusion() and versions()) whose objects
# upstream finds valid: no expected error.
UPSTREAM_VALID = [v for c in CASES if exclusion(c) is None and not c.get("expect") for v in versions(c)]


def _replay(node, index: int, case: dict) -> tuple[int, str] | None:
    """One valid case through the API server (and so the chart's webhook): a dry-run create, or
    for an update the old object stored and a dry-run replace by the new one. None: admitted."""
    obj = copy.deepcopy(case["object"])
    obj["metadata"] = {**(obj.get("metadata") or {}), "namespace": TENANT, "name": f"up-{index}"}
    base = f"/apis/{obj['apiVersion']}/namespaces/{TENANT}/{PLURALS[case['kind']]}"
    if case["operation"] == "CREATE":
        status, body = node.api("POST", f"{base}?dryRun=All", obj)
        return None if status == 201 else (status, f"create: {body.get('message')}")
    old = copy.deepcopy(case["oldObject"])
    meta = {k: v for k, v in (old.get("metadata") or {}).items() if k not in ("resourceVersion", "uid")}
    old["metadata"] = {**meta, "namespace": TENANT, "name": obj["metadata"]["name"]}
    status, stored = node.api("POST", base, old)
    if status != 201:
        return status, f"create of the old object: {stored.get('message')}"
    try:
        obj["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        # As a client's read-modify-write sends it: what the API server set at create (the Priority
        # admission plugin's spec.priority and spec.preemptionPolicy of a PodGroup) is kept.
        for key in ("priority", "preemptionPolicy"):
            if key in (stored.get("spec") or {}) and isinstance(obj.get("spec"), dict) and key not in obj["spec"]:
                obj["spec"][key] = stored["spec"][key]
        status, body = node.api("PUT", f"{base}/{obj['metadata']['name']}?dryRun=All", obj)
        return None if status == 200 else (status, f"update: {body.get('message')}")
    finally:
        node.api("PATCH", f"{base}/{obj['metadata']['name']}", {"metadata": {"finalizers": None}},
                 "application/merge-patch+json")
        node.api("DELETE", f"{base}/{obj['metadata']['name']}", {})


def test_with_every_gate_on_and_the_charts_defaults_every_upstream_valid_case_is_admitted(release):
    """Point 6: the node's API server has every gate on; the chart's config sets none
    (config.featureGates: {}); the serving Pods take the cluster's gates, so nothing the
    API server's own validation accepts is refused."""
    assert all(release.feature_gates.get(g) for g in ALL_GATES), release.feature_gates
    config = yaml.safe_load(release.kubectl("get", "configmap", FULLNAME, "-n", NS, "-o",
                                            "jsonpath={.data.config\\.yaml}").stdout)
    assert not config.get("featureGates"), config.get("featureGates")
    name = release.kubectl("get", "pods", "-n", NS, "-l", f"app.kubernetes.io/instance={RELEASE}", "-o",
                           "jsonpath={.items[0].metadata.name}").stdout
    log = release.kubectl("logs", "-n", NS, name).stdout
    assert "feature gates from the API server" in log and "PodGroupPreemptionPolicy=on" in log, log[:2000]
    assert len(UPSTREAM_VALID) >= 100
    t0 = time.monotonic()
    refused = [(c["id"], *r) for i, c in enumerate(UPSTREAM_VALID) if (r := _replay(release, i, c)) is not None]
    took = time.monotonic() - t0
    assert refused == [], f"{len(refused)} of {len(UPSTREAM_VALID)} upstream-valid cases refused: {refused[:5]}"
    # Control: the same path does reach the webhook (its own DIS-2 on a PodGroup).
    control = in_ns(podgroup("control", schedulingPolicy={"basic": {}}, disruptionMode={"all": {}}), TENANT)
    status, body = release.api("POST", f"/apis/scheduling.k8s.io/v1beta1/namespaces/{TENANT}/podgroups?dryRun=All",
                               control)
    assert status != 201 and "(DIS-2)" in body.get("message", ""), (status, body)
    creates = sum(c["operation"] == "CREATE" for c in UPSTREAM_VALID)
    release.timings["upstream-valid cases replayed"] = took
    summary.add(f"real node chart, every gate on, default values: {len(UPSTREAM_VALID)} upstream-valid cases "
                f"({creates} creates, {len(UPSTREAM_VALID) - creates} updates) admitted, 0 refused, in {took:.1f} s")


def test_a_podgroup_the_api_server_defaults_preemptionPolicy_on_is_admitted(release):
    """With PodGroupPreemptionPolicy on, kube-apiserver sets spec.preemptionPolicy on every PodGroup
    (the Job controller's too) before the webhook sees it."""
    try:
        for name, extra in (("pg-defaulted", {}), ("pg-explicit", {"preemptionPolicy": "PreemptLowerPriority"})):
            proc = release.kubectl("create", "-f", "-", check=False,
                                   input=yaml.safe_dump(in_ns(podgroup(name, **extra), TENANT)))
            assert proc.returncode == 0, proc.stderr
            stored = json.loads(release.kubectl("get", "podgroup", name, "-n", TENANT, "-o", "json").stdout)
            assert stored["spec"].get("preemptionPolicy"), stored["spec"]
    finally:
        release.kubectl("delete", "podgroup", "pg-defaulted", "pg-explicit", "-n", TENANT, "--ignore-not-found",
                        "--wait=false", check=False)


AUDITED = "ww-audited"


def test_the_charts_audit_with_every_gate_on_finds_no_violation_in_upstream_valid_objects(release):
    """Issue 28, point 4: the audit judged with the config's gates (all alpha ones off) and reported
    every PodGroup kube-apiserver had defaulted `spec.preemptionPolicy` on. The chart's CronJob, with
    the chart's defaults, now reads the cluster's gates (its ClusterRole may GET /metrics)."""
    node = release
    for path in glob_reports():
        node.kubectl("apply", "--server-side", "-f", path)
    wait_for("the report CRDs served", lambda: node.kubectl("get", "reports.openreports.io", "-A",
                                                            check=False).returncode == 0, node)
    node.kubectl("create", "namespace", AUDITED)
    job = f"{FULLNAME}-audit-now"
    try:
        stored = 0
        for i, case in enumerate(UPSTREAM_VALID):
            if case["operation"] != "CREATE":
                continue
            obj = copy.deepcopy(case["object"])
            obj["metadata"] = {**(obj.get("metadata") or {}), "namespace": AUDITED, "name": f"valid-{i}"}
            status, body = node.api("POST", f"/apis/{obj['apiVersion']}/namespaces/{AUDITED}/{PLURALS[case['kind']]}",
                                    obj)
            assert status == 201, (case["id"], body.get("message"))
            stored += 1
        defaulted = json.loads(node.kubectl("get", "podgroups", "-n", AUDITED, "-o", "json").stdout)["items"]
        assert defaulted and all(pg["spec"].get("preemptionPolicy") for pg in defaulted)   # what the audit refused
        node.kubectl("create", "job", job, f"--from=cronjob/{FULLNAME}-audit", "-n", NS)
        done = node.kubectl("wait", "--for=condition=complete", f"job/{job}", "-n", NS, "--timeout=180s",
                            check=False, timeout=200)
        log = node.kubectl("logs", f"job/{job}", "-n", NS, check=False).stdout + \
            node.kubectl("logs", f"job/{job}", "-n", NS, check=False).stderr
        assert done.returncode == 0, f"the audit Job did not complete: {done.stderr}\n{log[-3000:]}\n{node.diagnose(NS)}"
        gates = next((line for line in log.splitlines() if line.startswith("feature gates")), "")
        assert gates.startswith("feature gates from the API server: ") and "PodGroupPreemptionPolicy=on" in gates, log
        report = json.loads(node.kubectl("get", "reports.openreports.io", "workload-webhook", "-n", AUDITED, "-o",
                                         "json").stdout)
        assert report["summary"]["fail"] == 0 and report["summary"]["warn"] == 0, report["results"][:3]
        assert report["summary"]["pass"] == stored, report["summary"]
        summary.add(f"real node chart audit CronJob, every gate on, default values: {stored} upstream-valid objects "
                    f"audited, {report['summary']['fail']} violations")
    finally:
        node.kubectl("delete", "job", job, "-n", NS, "--cascade=foreground", "--ignore-not-found", "--wait=true",
                     check=False, timeout=120)
        node.kubectl("delete", "namespace", AUDITED, "--wait=false", check=False)


def _peak_memory(node) -> str | None:
    """Each serving Pod's peak memory so far, from its cgroup (v1, the kubelet's cgroupfs driver),
    and the limit the chart gave it."""
    peaks, limit = [], None
    for p in json.loads(node.kubectl("get", "pods", "-n", NS, "-l", f"app.kubernetes.io/instance={RELEASE}",
                                     "-o", "json").stdout)["items"]:
        limit = p["spec"]["containers"][0].get("resources", {}).get("limits", {}).get("memory")
        for path in glob.glob(f"/sys/fs/cgroup/memory/kubepods*/**/pod{p['metadata']['uid']}/memory.max_usage_in_bytes",
                              recursive=True):
            peaks.append(int(open(path).read()) / 2**20)
    return ", ".join(f"{m:.0f} MiB" for m in peaks) + f" (limit {limit})" if peaks else None


# ---------------------------------------------------------------- issue 27: safe to hand to operators

SERVING = "app.kubernetes.io/name=workload-webhook,app.kubernetes.io/component=webhook"


def _revision(node) -> set[str]:
    return {json.loads(node.kubectl("get", kind, FULLNAME, "-o", "json").stdout)["metadata"]["annotations"]
            .get(ANNOTATION_REVISION) for kind in HOOK_KINDS}


def _test_objects(node) -> list[str]:
    """Whatever `helm test` created that is still there, anywhere."""
    name = f"{FULLNAME}-test"
    left = [f"{kind}/{n}" for kind in ("clusterrole", "clusterrolebinding") for n in names(node, kind) if n == name]
    for kind in ("pod", "serviceaccount", "role", "rolebinding"):
        out = node.kubectl("get", kind, "-A", "-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} "
                           "{end}").stdout.split()
        left += [f"{kind}/{n}" for n in out if n.endswith("/" + name)]
    return left


def test_helm_test_passes_in_the_rollout_phases_the_docs_recommend(release, tmp_path):
    """Warn by default, DIS-2 at audit, forbidAllWithBasic off, the tenant namespace excluded: the
    DIS-2 dry run the old test relied on is admitted, and `helm test` still proves the release."""
    relaxed = tmp_path / "relaxed.yaml"
    relaxed.write_text(yaml.safe_dump({
        "config": {"targets": [TRAINJOB_TARGET], "policies": {"forbidAllWithBasic": False},
                   "enforcement": {"default": "warn", "rules": {"DIS-2": "audit"}}},
        "webhook": {"extraExcludedNamespaces": [TENANT]}}))
    try:
        release.helm("upgrade", RELEASE, CHART, "-n", NS, "--reuse-values", "-f", str(relaxed), "--wait",
                     "--timeout", "180s", timeout=240)
        # The new Pods registered the new revision (through the registration policy, as their ServiceAccount).
        wait_for("revision 2 registered", lambda: _revision(release) == {"2"}, release, timeout=90)
        wait_for("the bad TrainJob admitted in this phase", lambda: release.kubectl(
            "create", "-f", "-", "--dry-run=server", input=yaml.safe_dump(bad_trainjob("relaxed")),
            check=False).returncode == 0, release, interval=1)
        proc = release.helm("test", RELEASE, "-n", NS, "--timeout", "120s", check=False, timeout=180)
        assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{release.diagnose(NS)}"
        assert f"ok: {FULLNAME} is registered; 2 endpoint(s) answer" in proc.stderr, proc.stderr   # the Pod's log
        assert _test_objects(release) == []
    finally:
        # Back by an upgrade to the first values: a `helm rollback` re-applies revision 1's manifest, whose
        # Pods carry revision 1 and so never overwrite the registration of revision 2.
        first = tmp_path / "first.yaml"
        first.write_text(release.helm("get", "values", RELEASE, "-n", NS, "--revision", "1", "-o", "yaml").stdout)
        release.helm("upgrade", RELEASE, CHART, "-n", NS, "--reset-values", "-f", str(first), "--wait",
                     "--timeout", "180s", check=False, timeout=240)
    wait_for("revision 3 registered", lambda: _revision(release) == {"3"}, release, timeout=90)
    wait_for("the API server calling the webhook again", lambda: "(DIS-2)" in release.kubectl(
        "create", "-f", "-", "--dry-run=server", input=yaml.safe_dump(bad_trainjob("probe")), check=False).stderr,
        release, interval=1, timeout=120)


def test_a_failing_helm_test_says_why_and_leaves_nothing_behind(release):
    release.kubectl("scale", "deployment", FULLNAME, "-n", NS, "--replicas=0")
    try:
        wait_for("no serving Pod left", lambda: not names(release, "pods", NS) or None, release, timeout=90)
        proc = release.helm("test", RELEASE, "-n", NS, "--timeout", "120s", check=False, timeout=180)
        assert proc.returncode != 0, proc.stdout
        # The check's own line, copied out of the Pod by helm before the Pod was deleted.
        assert f"unhealthy after 15 s: Service {NS}/{FULLNAME} has no ready endpoint" in proc.stderr, proc.stderr
        assert _test_objects(release) == []
    finally:
        release.kubectl("scale", "deployment", FULLNAME, "-n", NS, "--replicas=2")
        release.kubectl("rollout", "status", f"deployment/{FULLNAME}", "-n", NS, "--timeout=180s", timeout=200)
    wait_for("the API server calling the webhook again", lambda: "(DIS-2)" in release.kubectl(
        "create", "-f", "-", "--dry-run=server", input=yaml.safe_dump(bad_trainjob("probe")), check=False).stderr,
        release, interval=1, timeout=120)


def test_a_stolen_service_account_token_cannot_register_a_webhook_for_secrets(release, tmp_path):
    policy = f"{FULLNAME}-registration"
    # kube-controller-manager type-checks every expression against the webhook configurations' schema.
    status = wait_for("the registration policy type-checked", lambda: (lambda st: st if "typeChecking" in st else None)(
        json.loads(release.kubectl("get", "validatingadmissionpolicy", policy, "-o", "json").stdout).get("status")
        or {}), release)
    assert not status["typeChecking"].get("expressionWarnings"), status
    kubeconfig = token_kubeconfig(release.cp, release.kubectl, FULLNAME, NS, tmp_path / "stolen.kubeconfig")
    assert release.kubectl("--kubeconfig", kubeconfig, "auth", "can-i", "create", "validatingwebhookconfigurations",
                           check=False).stdout.strip() == "yes"    # RBAC cannot say no to this
    for what, doc, words in hook_attempts(FULLNAME, NS):
        proc = release.kubectl("--kubeconfig", kubeconfig, "create", "-f", "-", input=yaml.safe_dump(doc), check=False)
        assert proc.returncode != 0 and f"ValidatingAdmissionPolicy '{policy}'" in proc.stderr and words in proc.stderr, \
            (what, proc.stderr)
    assert "steal" not in release.kubectl("get", "validatingwebhookconfiguration", "-o", "name").stdout
    proc = release.kubectl("--kubeconfig", kubeconfig, "delete", "validatingwebhookconfiguration", FULLNAME, check=False)
    assert proc.returncode != 0 and "forbidden" in proc.stderr
    assert release.kubectl("--kubeconfig", kubeconfig, "auth", "can-i", "get", "secrets", "-n", "kube-system",
                           check=False).stdout.strip() == "no"


def test_metrics_are_served_on_their_own_port_and_admission_is_not(release):
    """As a scraper sees them (through the API server's Pod proxy, over TLS): /metrics on 9090 sums the
    Pod's workers; the admission port no longer serves it, and the metrics port serves nothing else."""
    scraped = []
    for pod_name in names(release, "pods", NS):
        proxy = f"/api/v1/namespaces/{NS}/pods/https:{pod_name}:{{port}}/proxy/{{path}}"
        scraped.append(release.kubectl("get", "--raw", proxy.format(port=9090, path="metrics")).stdout)
        assert 'workload_webhook_cluster_cache_synced{resource="podgroups"} 1.0' in scraped[-1], scraped[-1][:2000]
        for port, path in ((8443, "metrics"), (9090, "healthz"), (9090, "validate")):
            proc = release.kubectl("get", "--raw", proxy.format(port=port, path=path), check=False)
            assert proc.returncode != 0 and "NotFound" in proc.stderr, (port, path, proc.stdout[:200], proc.stderr)
    assert any('workload_webhook_requests_total{' in m and 'kind="TrainJob"' in m for m in scraped)
    _every_series_is_scraped(release, scraped)
    # `kubectl logs deploy/...` and the PodDisruptionBudget see the serving Pods, by the component too.
    assert sorted(names(release, "pods", NS)) == sorted(release.kubectl(
        "get", "pods", "-n", NS, "-l", SERVING, "-o", "jsonpath={.items[*].metadata.name}").stdout.split())
    pdb = json.loads(release.kubectl("get", "pdb", FULLNAME, "-n", NS, "-o", "json").stdout)
    assert pdb["status"]["expectedPods"] == 2 and pdb["status"]["currentHealthy"] == 2


def _every_series_is_scraped(release, scraped: list[str]) -> None:
    """Issue 30: each Pod's metrics port lists every series known in advance for the release's
    own config (webhook/server/series.py), build_info, both certificates' expiry and the watch
    cache's freshness, whatever it has served."""
    from webhook import config as config_mod
    from webhook.server import series
    cfg = config_mod.from_dict(yaml.safe_load(release.kubectl("get", "configmap", FULLNAME, "-n", NS, "-o",
                                                              "jsonpath={.data.config\\.yaml}").stdout))
    expected = set()
    for metric, labels in series.all_series(cfg):
        name = metric._name + {"counter": "_total", "histogram": "_count"}.get(metric._type, "")
        expected.add(name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(zip(metric._labelnames, labels))) + "}")
    expected |= {f'workload_webhook_certificate_expiry_timestamp_seconds{{certificate="{c}"}}' for c in ("serving", "ca")}
    expected |= {f'workload_webhook_cluster_cache_{m}{{resource="podgroups"}}'
                 for m in ("synced", "objects", "last_event_timestamp_seconds", "relists_total")}
    expected.add("workload_webhook_events_written_total")
    assert len(expected) > 200          # one target: about 300
    for text in scraped:
        values = {line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
                  for line in text.splitlines() if line and not line.startswith("#")}
        assert sorted(expected - set(values)) == []
        info = [k for k in values if k.startswith("workload_webhook_build_info{")]
        assert len(info) == 1 and values[info[0]] == 1, info
        assert values['workload_webhook_certificate_expiry_timestamp_seconds{certificate="serving"}'] > time.time()
        assert time.time() - values['workload_webhook_cluster_cache_last_event_timestamp_seconds{resource="podgroups"}'] \
            < 600


def test_the_serving_pods_logged_no_error_and_no_traceback(release):
    """After every test above: the serving Pods' logs (JSON lines, certificate sync,
    registration, caches, admissions) hold no error, no traceback and no TLS record
    error (the gevent worker's forked processes once shared a connection of the
    master's and logged DECRYPTION_FAILED_OR_BAD_RECORD_MAC)."""
    names = release.kubectl("get", "pods", "-n", NS, "-l", f"app.kubernetes.io/instance={RELEASE}", "-o",
                            "jsonpath={.items[*].metadata.name}").stdout.split()
    assert names
    for name in names:
        log = release.kubectl("logs", "-n", NS, name).stdout
        assert "podgroups synced" in log, log[:2000]        # the log is the serving one
        bad = [line for line in log.splitlines()
               if any(mark in line for mark in ('"level":"error"', "[ERROR]", "Traceback", "BAD_RECORD_MAC",
                                                "DECRYPTION_FAILED"))]
        assert bad == [], f"{name}: {bad[:5]}"


def test_uninstall_leaves_nothing_of_the_release(release):
    if peaks := _peak_memory(release):
        summary.add(f"real node chart: the serving Pods' peak memory after the tests: {peaks}")
    present = {kind: release_objects(release, kind) for kind in HOOK_KINDS + POLICY_KINDS}
    present["secret"] = release_objects(release, "secret", NS)
    assert all(present.values()), present          # there was something to remove
    t0 = time.monotonic()
    release.helm("uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "60s")
    for kind in HOOK_KINDS + POLICY_KINDS:
        wait_for(f"{kind} of the release removed after helm uninstall",
                 lambda: not release_objects(release, kind) or None, release)
    assert release_objects(release, "secret", NS) == []
    assert release_objects(release, "clusterrole") == [] and release_objects(release, "clusterrolebinding") == []
    release.timings["uninstall to nothing left"] = time.monotonic() - t0
    # Admission is as before the install: a bad TrainJob is now stored.
    release.kubectl("create", "-f", "-", input=yaml.safe_dump(bad_trainjob("after")))
