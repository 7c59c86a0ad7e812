"""Unknown fields in Workload, PodGroup and CompositePodGroup: `validate` names the
same fields as kube-apiserver's strict decoding, which `kubectl apply` (strict by
default) reports: `unknown field "spec.schedulingPolicyy"`. Each object is sent
with `kubectl create --dry-run=server --validate=strict` (no webhook registered:
the API server alone answers) and judged offline as `validate` judges it."""
from __future__ import annotations

import re

import pytest
import yaml

from webhook import engine
from webhook.config import from_dict
from webhook.schemas.unknown_fields import added

CFG = from_dict({"featureGates": {"CompositePodGroup": True, "PodGroupPreemptionPolicy": True}})
NS = "unknown-fields"
UNKNOWN = re.compile(r'unknown field "([^"]+)"')


def podgroup(**extra) -> dict:
    obj = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg", "namespace": NS},
           "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    for path, value in extra.items():
        node = obj
        *parents, last = path.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return obj


WORKLOAD = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "wl", "namespace": NS},
            "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}, "minCount": 2}]}}
COMPOSITE = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
             "metadata": {"name": "c", "namespace": NS}, "spec": {"schedulingPolicy": {"basic": {}}, "children": 2}}
CASES = [
    ("beside the blocks", podgroup(spec__schedulingPolicyy={})),
    ("two at once", podgroup(spec__schedulingPolicyy={}, spec__minCount=2)),
    ("in metadata", podgroup(metadata__labelz={"a": "b"})),
    ("in the workload reference", podgroup(spec__workloadRef={"workloadName": "w", "templateName": "t", "x": 1})),
    ("at the top", podgroup(extra=1)),
    ("in a status condition", podgroup(status={"conditions": [{"type": "A", "status": "True", "reason": "R",
                                                               "message": "", "lastTransitionTime":
                                                               "2026-01-01T00:00:00Z", "bogus": 1}]})),
    ("in a Workload template", WORKLOAD),
    ("in a CompositePodGroup", COMPOSITE),
    ("none: every ObjectMeta field a client sends", podgroup(
        metadata__labels={"a": "b"}, metadata__annotations={"c": "d"}, metadata__finalizers=["example.com/x"],
        metadata__generateName="pg-",
        metadata__ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "1234",
                                    "controller": True, "blockOwnerDeletion": False}],
        spec__workloadRef={"workloadName": "w", "templateName": "t"}, spec__disruptionMode={"single": {}})),
]


@pytest.fixture(scope="module")
def strict_server(kubectl):
    kubectl("create", "namespace", NS, check=False)
    return kubectl


def api_server_unknown(kubectl, obj: dict) -> set[str]:
    proc = kubectl("create", "--dry-run=server", "--validate=strict", "-f", "-", stdin=yaml.safe_dump(obj), check=False)
    found = set(UNKNOWN.findall(proc.stderr))
    assert found or proc.returncode == 0, f"refused for another reason: {proc.stderr}"
    return found


def validate_unknown(obj: dict) -> set[str]:
    verdict = added(engine.validate(engine.Request.for_object(obj), CFG, scope="cli"), obj)   # as `validate` judges
    return {str(e.field) for e in verdict.errors if e.detail.startswith("unknown field ")}


@pytest.mark.parametrize("case_id,obj", CASES, ids=[c[0] for c in CASES])
def test_validate_names_the_unknown_fields_kube_apiserver_names(strict_server, case_id, obj):
    assert validate_unknown(obj) == api_server_unknown(strict_server, obj)
