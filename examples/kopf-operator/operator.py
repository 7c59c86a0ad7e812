"""An example TrainJob operator on kopf (`pip install 'workload-webhook[kopf]'`):

    kopf run --standalone --namespace ml examples/kopf-operator/operator.py

(TRAINJOB_POD_SPEC, JSON, adds fields to every Pod's spec: resources, a nodeSelector, ...)

On create it validates the TrainJob's spec.scheduling with webhook.builder (errors go
to the TrainJob's status and an Event, nothing is created), then creates the Workload
and PodGroup the builder compiles and the Pods that join the group; the scheduler
places the gang all or nothing. Everything is owned by the TrainJob. See
trainjob_objects.py for what is created; docs/builder.md for the library."""
from __future__ import annotations

import json
import os
import sys

import kopf
import kubernetes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trainjob_objects import errors_for, objects_for  # noqa: E402

# Fields added to every Pod's spec, as JSON (`container` merges into the container):
# e.g. {"container": {"resources": {"requests": {"cpu": "1"}}}, "nodeSelector": {...}}.
POD_SPEC = json.loads(os.environ.get("TRAINJOB_POD_SPEC") or "{}")
PLURALS = {"Workload": ("scheduling.k8s.io", "v1beta1", "workloads"),
           "PodGroup": ("scheduling.k8s.io", "v1beta1", "podgroups")}


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_) -> None:
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()


def _create(obj: dict) -> None:
    ns = obj["metadata"]["namespace"]
    try:
        if obj["kind"] == "Pod":
            kubernetes.client.CoreV1Api().create_namespaced_pod(ns, obj)
        else:
            group, version, plural = PLURALS[obj["kind"]]
            kubernetes.client.CustomObjectsApi().create_namespaced_custom_object(group, version, ns, plural, obj)
    except kubernetes.client.ApiException as exc:
        if exc.status != 409:          # already there: a restarted operator resumes
            raise


@kopf.on.create("training.example.com", "v1alpha1", "trainjobs")
def create(body, patch, logger, **_) -> dict:
    trainjob = dict(body)
    errors = errors_for(trainjob)
    if errors:
        patch.status["phase"] = "Invalid"
        raise kopf.PermanentError("; ".join(str(e) for e in errors))
    objects = objects_for(trainjob, POD_SPEC)
    for obj in objects:
        _create(obj)
    logger.info("created %s", ", ".join(f"{o['kind']} {o['metadata']['name']}" for o in objects[:2]))
    return {"workload": objects[0]["metadata"]["name"], "podGroup": objects[1]["metadata"]["name"],
            "pods": len(objects) - 2}
