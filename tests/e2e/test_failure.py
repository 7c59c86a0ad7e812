"""What the cluster does when the webhook is down: validation of the guarded
objects fails closed, Pods that name no pod group are never blocked
(matchConditions), kube-system and the webhook's own namespace are never
intercepted. The webhook then comes back on the same URL."""
import copy

from tests.unit.helpers import pod, trainjob

LABEL = "scheduling.k8s.io/pod-group"


def placed(obj, namespace, name=None):
    obj = copy.deepcopy(obj)
    obj["metadata"] = {**obj["metadata"], "namespace": namespace}
    if name:
        obj["metadata"]["name"] = name
    return obj


def test_webhook_down(webhook, kubectl, namespace):
    kubectl("create", "namespace", "workload-webhook", check=False)
    valid_job = trainjob({"schedulingPolicy": {"gang": {"minCount": 2}}}, replicas=2)
    webhook.stop()
    try:
        proc = kubectl.apply(placed(valid_job, namespace), check=False)
        assert proc.returncode != 0 and "failed calling webhook" in proc.stderr      # fails closed
        kubectl.apply(placed(pod({"app": "web"}), namespace, "plain"))               # never blocked
        proc = kubectl.apply(placed(pod({LABEL: "g"}), namespace, "grouped"), check=False)
        assert proc.returncode != 0 and "failed calling webhook" in proc.stderr      # Pod failurePolicy Fail
        for excluded in ("kube-system", "workload-webhook"):
            kubectl.apply(placed(valid_job, excluded, f"while-down-{namespace}"))
            kubectl.apply(placed(pod({LABEL: "g"}), excluded, f"while-down-{namespace}"))
    finally:
        webhook.start()
    # Back on the same URL: enforcement resumes without re-registering.
    kubectl.apply(placed(valid_job, namespace))
    bad = trainjob({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}})
    proc = kubectl.apply(placed(bad, namespace, "bad"), check=False)
    assert proc.returncode != 0 and "spec.scheduling.disruptionMode" in proc.stderr
