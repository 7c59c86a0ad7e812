"""What the example TrainJob operator creates for one TrainJob (no kopf needed here):
the Workload and PodGroup that webhook.builder builds from its spec.scheduling, and
spec.replicas Pods that join the group (spec.schedulingGroup and the group labels).
Every object is owned by the TrainJob, so deleting it deletes them all.

The TrainJob is examples/crds/trainjob.yaml: spec.replicas, spec.image and the
four leaf blocks at spec.scheduling; an unset gang minCount is the replica count."""
from __future__ import annotations

from webhook.builder import (ALL_MODES, ALL_POLICIES, Builder, BuildOptions, SchedulingConfig, SchedulingPolicy,
                             WorkloadInput, WorkloadItem, controller_ref, pod_group_name, template_name,
                             workload_name)
from webhook.field import FieldError, Path

GROUP_LABEL = "scheduling.k8s.io/pod-group"
WORKLOAD_LABEL = "scheduling.k8s.io/workload"


def _min_count_from_replicas(replicas: int):
    def default(cfg: SchedulingConfig) -> None:
        if cfg.policy is not None and cfg.policy.gang is not None and cfg.policy.gang.min_count is None:
            cfg.policy.gang.min_count = max(1, replicas)
    return default


def builder_for(trainjob: dict) -> tuple[Builder, WorkloadItem]:
    meta, spec = trainjob["metadata"], trainjob.get("spec") or {}
    item = WorkloadItem(template_name(meta["name"]), Path("spec", "scheduling"),
                        SchedulingConfig(policy=SchedulingPolicy(basic=True)),
                        WorkloadInput.leaf(spec.get("scheduling")),
                        [_min_count_from_replicas(int(spec.get("replicas") or 1))])
    owner = controller_ref({"apiVersion": trainjob["apiVersion"], "kind": trainjob["kind"], "name": meta["name"],
                            "uid": meta["uid"]})
    return Builder(item, BuildOptions(name=workload_name(meta["name"], meta["uid"]), namespace=meta["namespace"],
                                      owner=owner, allowed_policies=ALL_POLICIES,
                                      allowed_disruption_modes=ALL_MODES)), item


def errors_for(trainjob: dict) -> list[FieldError]:
    """The user's errors (the webhook's own rules), at the TrainJob's paths."""
    return builder_for(trainjob)[0].validate()


def objects_for(trainjob: dict, pod_spec: dict | None = None) -> list[dict]:
    """The Workload, the PodGroup, then the Pods, in the order to create them. `pod_spec`:
    fields added to every Pod's spec (the container's `resources`, a `nodeSelector`, ...)."""
    b, item = builder_for(trainjob)
    workload = b.build_workload()
    group = pod_group_name(workload["metadata"]["name"], item.name)
    pod_group = b.new_pod_group(group, item.name)
    meta, spec = trainjob["metadata"], trainjob.get("spec") or {}
    owner = workload["metadata"]["ownerReferences"]
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{meta['name']}-worker-{i}", "namespace": meta["namespace"],
                          "labels": {GROUP_LABEL: group, WORKLOAD_LABEL: workload["metadata"]["name"]},
                          "ownerReferences": owner},
             "spec": {"schedulingGroup": {"podGroupName": group}, "restartPolicy": "Never",
                      "containers": [{"name": "trainer", "image": spec.get("image") or "registry.k8s.io/pause:3.10",
                                      **((pod_spec or {}).get("container") or {})}],
                      **{k: v for k, v in (pod_spec or {}).items() if k != "container"}}}
            for i in range(int(spec.get("replicas") or 1))]
    return [workload, pod_group, *pods]
