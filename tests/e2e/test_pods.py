"""Pods joining their pod group through the real API server: the stored Pod
carries the mutation; the watch cache sees PodGroups created later."""
import time

import yaml

from tests.unit.helpers import pod, podgroup

LABEL = "scheduling.k8s.io/pod-group"
GPU = {"name": "gpu", "resourceClaimTemplateName": "gpus"}


def ns_obj(obj, namespace):
    obj = dict(obj)
    obj["metadata"] = {**obj["metadata"], "namespace": namespace}
    return obj


def metric(webhook, name, **labels) -> float:
    _, _, body = webhook.server.get("/metrics")
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_POD_1_4_8_pod_comes_back_joined_with_claims(webhook, kubectl, namespace):
    kubectl.apply(ns_obj(podgroup("train-0", resourceClaims=[GPU],
                                  workloadRef={"workloadName": "train", "templateName": "workers"}), namespace))
    # Wait until the watch has delivered it: a dry-run Pod is served from the cache.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        hits = metric(webhook, "workload_webhook_cluster_lookups_total", resource="podgroups", source="cache")
        kubectl.apply(ns_obj(pod({LABEL: "train-0"}), namespace), "--dry-run=server")
        if metric(webhook, "workload_webhook_cluster_lookups_total", resource="podgroups", source="cache") > hits:
            break
        time.sleep(0.2)
    hits = metric(webhook, "workload_webhook_cluster_lookups_total", resource="podgroups", source="cache")
    kubectl.apply(ns_obj(pod({LABEL: "train-0"}), namespace))
    stored = kubectl.get("pod", "p", namespace)
    assert stored["spec"]["schedulingGroup"] == {"podGroupName": "train-0"}
    assert stored["metadata"]["labels"]["scheduling.k8s.io/workload"] == "train"
    assert stored["spec"]["resourceClaims"] == [GPU]
    assert stored["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert metric(webhook, "workload_webhook_cluster_lookups_total", resource="podgroups", source="cache") > hits


def test_POD_2_scheduling_group_adds_label(webhook, kubectl, namespace):
    kubectl.apply(ns_obj(podgroup("g"), namespace))
    kubectl.apply(ns_obj(pod(None, schedulingGroup={"podGroupName": "g"}), namespace))
    assert kubectl.get("pod", "p", namespace)["metadata"]["labels"][LABEL] == "g"


def test_POD_5_pod_before_its_podgroup_is_admitted_with_warning(webhook, kubectl, namespace):
    proc = kubectl.apply(ns_obj(pod({LABEL: "later"}), namespace))
    assert "Warning:" in proc.stderr and "not found yet" in proc.stderr
    assert kubectl.get("pod", "p", namespace)["spec"]["schedulingGroup"] == {"podGroupName": "later"}
    # The PodGroup arrives afterwards; the next Pod gets its claims (watch cache or bounded GET).
    kubectl.apply(ns_obj(podgroup("later", resourceClaims=[GPU]), namespace))
    second = pod({LABEL: "later"})
    second["metadata"]["name"] = "p2"
    kubectl.apply(ns_obj(second, namespace))
    assert kubectl.get("pod", "p2", namespace)["spec"]["resourceClaims"] == [GPU]


def test_POD_4_conflicting_claim_is_rejected(webhook, kubectl, namespace):
    kubectl.apply(ns_obj(podgroup("g", resourceClaims=[GPU]), namespace))
    bad = pod({LABEL: "g"}, resourceClaims=[{"name": "gpu", "resourceClaimName": "mine"}])
    proc = kubectl.apply(ns_obj(bad, namespace), check=False)
    assert proc.returncode != 0
    assert "spec.resourceClaims[0]" in proc.stderr and "would not share the group's claim" in proc.stderr
    assert not kubectl.exists("pod", "p", namespace)


def test_POD_3_label_and_field_disagree(webhook, kubectl, namespace):
    proc = kubectl.apply(ns_obj(pod({LABEL: "a"}, schedulingGroup={"podGroupName": "b"}), namespace), check=False)
    assert proc.returncode != 0 and "spec.schedulingGroup.podGroupName" in proc.stderr


def test_POD_5_podgroup_being_deleted(webhook, kubectl, namespace):
    kubectl.apply(ns_obj(podgroup("dying"), namespace))
    # PodGroupProtection keeps it (finalizer) with a deletionTimestamp: no controller runs here.
    kubectl("delete", "podgroup", "dying", "-n", namespace, "--wait=false")
    proc = kubectl.apply(ns_obj(pod({LABEL: "dying"}), namespace), check=False)
    assert proc.returncode != 0 and "being deleted" in proc.stderr
    kubectl("patch", "podgroup", "dying", "-n", namespace, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')


def test_ADM_4_create_dry_run_shows_the_mutation(webhook, kubectl, namespace):
    kubectl.apply(ns_obj(podgroup("g", resourceClaims=[GPU]), namespace))
    out = kubectl("create", "-f", "-", "--dry-run=server", "-o", "yaml", stdin=yaml.safe_dump(ns_obj(pod({LABEL: "g"}),
                                                                                                     namespace))).stdout
    shown = yaml.safe_load(out)
    assert shown["spec"]["schedulingGroup"] == {"podGroupName": "g"} and shown["spec"]["resourceClaims"] == [GPU]
    assert not kubectl.exists("pod", "p", namespace)


def test_pods_without_a_group_are_untouched(webhook, kubectl, namespace):
    kubectl.apply(ns_obj(pod({"app": "web"}), namespace))
    stored = kubectl.get("pod", "p", namespace)
    assert "schedulingGroup" not in stored["spec"] and stored["metadata"]["labels"] == {"app": "web"}
