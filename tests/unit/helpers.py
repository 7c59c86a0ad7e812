"""Builders for test objects and a compact way to read verdicts."""
from __future__ import annotations

import copy
from typing import Any

from webhook import engine
from webhook.config import Config, from_dict

TRAINJOB_TARGET = {
    "group": "training.example.com", "kind": "TrainJob",
    "groups": [{
        "schedulingPolicy": "spec.scheduling.schedulingPolicy",
        "schedulingConstraints": "spec.scheduling.schedulingConstraints",
        "disruptionMode": "spec.scheduling.disruptionMode",
        "resourceClaims": "spec.scheduling.resourceClaims",
        "size": "spec.replicas",
    }],
}
GROUPJOB_TARGET = {
    "group": "jobs.example.com", "kind": "GroupJob",
    "composite": {"schedulingPolicy": "spec.scheduling.schedulingPolicy",
                  "schedulingConstraints": "spec.scheduling.schedulingConstraints",
                  "disruptionMode": "spec.scheduling.disruptionMode",
                  "children": "spec.replicatedJobs"},
    "groups": [{"schedulingPolicy": "spec.replicatedJobs[*].scheduling.schedulingPolicy",
                "disruptionMode": "spec.replicatedJobs[*].scheduling.disruptionMode",
                "resourceClaims": "spec.replicatedJobs[*].scheduling.resourceClaims",
                "size": "spec.replicatedJobs[*].replicas"}],
}


def config(**overrides: Any) -> Config:
    data = {"featureGates": {"CompositePodGroup": True, "PodGroupPreemptionPolicy": True},
            "targets": [TRAINJOB_TARGET, GROUPJOB_TARGET]}
    data.update(overrides)
    return from_dict(data)


def trainjob(scheduling: Any = None, replicas: Any = 4, **spec: Any) -> dict:
    body = {"replicas": replicas, **spec}
    if scheduling is not None:
        body["scheduling"] = scheduling
    return {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "tj", "namespace": "ml"}, "spec": body}


def groupjob(scheduling: Any = None, jobs: Any = None) -> dict:
    spec: dict = {}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    if jobs is not None:
        spec["replicatedJobs"] = jobs
    return {"apiVersion": "jobs.example.com/v1", "kind": "GroupJob",
            "metadata": {"name": "gj", "namespace": "ml"}, "spec": spec}


def template(name: str = "workers", policy: Any = None, **fields: Any) -> dict:
    return {"name": name, "schedulingPolicy": policy if policy is not None else {"gang": {"minCount": 2}}, **fields}


def composite_template(name: str, policy: Any = None, pgs: list | None = None, cpgs: list | None = None, **fields) -> dict:
    t = {"name": name, "schedulingPolicy": policy if policy is not None else {"gang": {"minGroupCount": 1}}, **fields}
    if pgs is not None:
        t["podGroupTemplates"] = pgs
    if cpgs is not None:
        t["compositePodGroupTemplates"] = cpgs
    return t


def workload(templates: list | None = None, version: str = "v1beta1", composites: list | None = None, **spec) -> dict:
    body = dict(spec)
    if templates is not None:
        body["podGroupTemplates"] = templates
    if composites is not None:
        body["compositePodGroupTemplates"] = composites
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "ml"}, "spec": body}


def podgroup(name: str = "pg", version: str = "v1beta1", **spec: Any) -> dict:
    body = {"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"single": {}}}
    body.update(spec)
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml"}, "spec": {k: v for k, v in body.items() if v is not None}}


def composite_podgroup(**spec: Any) -> dict:
    body = {"workloadRef": {"workloadName": "wl", "templateName": "pipeline"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}}, "disruptionMode": {"single": {}}}
    body.update(spec)
    return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"name": "cpg", "namespace": "ml"}, "spec": {k: v for k, v in body.items() if v is not None}}


def pod(labels: dict | None = None, **spec: Any) -> dict:
    body = {"containers": [{"name": "c", "image": "busybox"}]}
    body.update(spec)
    meta: dict = {"name": "p", "namespace": "ml"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def check(obj: dict, old: dict | None = None, cfg: Config | None = None, view=None) -> engine.Verdict:
    return engine.validate(engine.Request.for_object(obj, old), cfg or config(), view)


def found(verdict: engine.Verdict) -> set[tuple[str, str]]:
    """The (type, field) pairs of a verdict's errors."""
    return {(e.type, str(e.field)) for e in verdict.errors}


def with_(obj: dict, path: str, value: Any) -> dict:
    """A copy of obj with the dotted path set (creating maps)."""
    out = copy.deepcopy(obj)
    node = out
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
    return out


def node_paths(obj: Any, prefix: tuple = ()):
    """Every path into a JSON value (as tuples of keys and indices), the root first."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from node_paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from node_paths(v, prefix + (i,))


def replaced(obj: Any, path: tuple, value: Any) -> Any:
    """A deep copy of `obj` with the node at `path` (a node_paths path) replaced by `value`."""
    if not path:
        return value
    out = copy.deepcopy(obj)
    node = out
    for seg in path[:-1]:
        node = node[seg]
    node[path[-1]] = value
    return out


def kubeconfig_to(url: str) -> str:
    """A kubeconfig (JSON) for a server at `url` that is not verified: for tests
    whose "API server" is a loopback socket that never answers properly."""
    import json
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": url, "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]})
