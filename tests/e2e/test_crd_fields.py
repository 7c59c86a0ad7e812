"""`validate --crd` against the real API server: for objects with typos beside
(and inside) the building blocks, the fields kube-apiserver's strict decoding
names (`kubectl apply --dry-run=server --validate=strict`) are exactly the
fields webhook/schemas/unknown_fields.py names offline from the same CRD, on the example
TrainJob CRD and on the operators' real CRDs."""
from __future__ import annotations

import copy
import os
import re

import pytest
import yaml

from tests.e2e import adopters
from tests.server.harness import REPO
from webhook.schemas import unknown_fields as crd_fields

POD = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}


def trainjob(ns):
    return {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "typos", "namespace": ns, "labelz": {"a": "b"}},
            "spec": {"replicas": 4, "imagee": "busybox",
                     "scheduling": {"disruptonMode": {"all": {}}, "schedulingPolicy": {"gang": {"minCont": 2}}}}}


def jobset(ns):
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "typos", "namespace": ns},
            "spec": {"replicatedJobs": [{"name": "a", "replica": 1, "template": {"spec": {
                "parallelism": 2, "template": copy.deepcopy(POD)}}}],
                "schedulng": {"schedulingPolicy": {"gang": {"minCount": 2}}},
                "scheduling": {"disruptionMode": {"all": {}, "extra": 1}}}}


def lws(ns):
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "typos", "namespace": ns},
            "spec": {"leaderWorkerTemplate": {"size": 4, "sizee": 2, "workerTemplate": copy.deepcopy(POD)},
                     "scheduling": {"schedulingPolicy": {"gang": {"minCount": 4, "maxCount": 5}}}}}


@pytest.fixture(scope="module")
def crd_files(kubectl, crds):
    adopters.install_crd(kubectl, adopters.JOBSET_WAS)
    adopters.install_crd(kubectl, adopters.LWS_WAS)
    return {"TrainJob": os.path.join(REPO, "examples", "crds", "trainjob.yaml"),
            "JobSet": adopters.crd_path(adopters.JOBSET_WAS), "LeaderWorkerSet": adopters.crd_path(adopters.LWS_WAS)}


@pytest.mark.parametrize("make", [trainjob, jobset, lws], ids=["trainjob", "jobset", "lws"])
def test_offline_unknown_fields_are_the_api_servers(kubectl, namespace, crd_files, make):
    obj = make(namespace)
    proc = kubectl.apply(obj, "--dry-run=server", "--validate=strict", check=False)
    assert proc.returncode != 0, proc.stdout
    server = sorted(set(re.findall(r'unknown field "([^"]+)"', proc.stderr)))
    schemas = crd_fields.CrdSchemas()
    with open(crd_files[obj["kind"]]) as f:
        assert schemas.add_crd(yaml.safe_load(f)) is None
    offline = sorted({str(e.field) for e in crd_fields.crd_unknown_fields(obj, schemas.for_object(obj))})
    print(f"\n{obj['kind']}: the API server and validate --crd both name {offline}")
    assert server and offline == server, proc.stderr
