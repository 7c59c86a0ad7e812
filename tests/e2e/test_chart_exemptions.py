"""Label-based exemptions (issue 30, point 4) as the real kube-apiserver applies them. The chart
in Service mode with webhook.namespaceSelector and objectSelector; its ServiceAccount registers
what the ConfigMap carries, as the serving Pods do (the registration policy admits it). Its Pods
never run here (no node), so every call the API server makes fails, and with failurePolicy Fail
the object is refused: a refusal shows the webhook was called, an admission that it was not.
The selectors select only this test's namespaces (a label of its own), so no other test is judged."""
from __future__ import annotations

import time

import yaml

from tests.e2e.rest import token_kubeconfig
from tests.e2e.test_chart import CHART, helm, token_kubectl, values_file
from tests.unit.helpers import podgroup

NS, RELEASE, FULLNAME = "ww-exempt", "wwx", "wwx-workload-webhook"
JUDGED = {"ww-e2e-exemptions": "judged"}
EXEMPT = "workload-webhook.k8s.io/exempt"
CALLED = "failed calling webhook"


def _create(kubectl, namespace: str, labels: dict | None = None):
    doc = podgroup("gang")
    doc["metadata"].update(namespace=namespace, labels=labels or {})
    return kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(doc), check=False)


def test_exempt_namespaces_and_objects_are_never_sent_and_the_built_in_exclusion_holds(cluster, kubectl, tmp_path):
    unless_exempt = [{"key": EXEMPT, "operator": "DoesNotExist"}]
    values = values_file(tmp_path, webhook={"namespaceSelector": {"matchLabels": JUDGED, "matchExpressions": unless_exempt},
                                            "objectSelector": {"matchExpressions": unless_exempt}})
    namespaces = {"judged": JUDGED, "exempt": {**JUDGED, EXEMPT: "true"}, "unlabelled": {}}
    kubectl("create", "namespace", NS, check=False)
    kubectl("label", "namespace", NS, *(f"{k}={v}" for k, v in JUDGED.items()), "--overwrite")
    for suffix, labels in namespaces.items():
        kubectl("create", "namespace", f"{NS}-{suffix}", check=False)
        if labels:
            kubectl("label", "namespace", f"{NS}-{suffix}", *(f"{k}={v}" for k, v in labels.items()), "--overwrite")
    helm(cluster, "install", RELEASE, CHART, "-n", NS, "-f", values)
    try:
        # Registered as the serving Pods register it: the release's ServiceAccount, the ConfigMap's webhooks.yaml.
        as_sa = token_kubectl(cluster, token_kubeconfig(cluster, kubectl, FULLNAME, NS, tmp_path / "sa.kubeconfig"))
        registration = kubectl("get", "configmap", FULLNAME, "-n", NS, "-o", "jsonpath={.data.webhooks\\.yaml}").stdout
        proc = as_sa("create", "-f", "-", stdin=registration)
        assert proc.returncode == 0, proc.stderr                  # the registration policy admits the selectors
        # The API server picks the configuration up a moment later: a judged namespace is refused.
        deadline = time.monotonic() + 30
        while CALLED not in (judged := _create(kubectl, f"{NS}-judged")).stderr and time.monotonic() < deadline:
            time.sleep(0.3)
        assert judged.returncode != 0 and CALLED in judged.stderr and "scheduling.validate.workload-webhook.k8s.io" \
            in judged.stderr, judged.stderr
        # Exempt by namespace label, by object label, or outside the selected namespaces: never sent.
        for what, proc in (("an exempt namespace", _create(kubectl, f"{NS}-exempt")),
                           ("an exempt object", _create(kubectl, f"{NS}-judged", {EXEMPT: "true"})),
                           ("a namespace the matchLabels do not select", _create(kubectl, f"{NS}-unlabelled"))):
            assert proc.returncode == 0, (what, proc.stderr)
        # The release namespace carries the selected label, and stays excluded (the built-in NotIn, ANDed).
        proc = _create(kubectl, NS)
        assert proc.returncode == 0, proc.stderr
        # A judged object in a judged namespace is still sent, whatever else it is labelled.
        proc = _create(kubectl, f"{NS}-judged", {"team": "ml"})
        assert proc.returncode != 0 and CALLED in proc.stderr, proc.stderr
    finally:
        kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", FULLNAME,
                "--ignore-not-found", check=False)
        helm(cluster, "uninstall", RELEASE, "-n", NS, check=False)
        for suffix in namespaces:
            kubectl("delete", "namespace", f"{NS}-{suffix}", "--wait=false", check=False)
