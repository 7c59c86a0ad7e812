"""`workload-webhook render`'s objects are what a real 1.37 kube-apiserver accepts:
every valid object of the corpus (examples/valid with examples/config.yaml, a
LeaderWorkerSet, a batch/v1 Job, a Job-template CRD of the job-template profile,
and the differential test's seeded objects the engine allows) is rendered, and
`kubectl apply --dry-run=server` of all the Workloads, CompositePodGroups and
PodGroups must create every one of them; and so must the kopf example operator's
objects (examples/kopf-operator: a TrainJob's Workload, PodGroup and Pods)."""
from __future__ import annotations

import copy
import glob
import importlib.util
import json
import os
import subprocess
import sys

import yaml

from tests.e2e.oracle_cases import generate
from tests.e2e.test_upstream_oracle import CONFIG as ORACLE_CONFIG, _request
from webhook import engine
from webhook.builder.targets import render

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONTAINER = [{"name": "c", "image": "registry.example.com/app:1"}]
EXTRA = [
    {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "serve", "namespace": "ml"},
     "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4, "workerTemplate": {"spec": {"containers": CONTAINER}}},
              "scheduling": {"schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"all": {}}}}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "etl", "namespace": "ml"},
     "spec": {"parallelism": 3, "scheduling": {"schedulingPolicy": {"gang": {}}},
              "template": {"spec": {"restartPolicy": "Never", "containers": CONTAINER}}}},
    {"apiVersion": "example.com/v1", "kind": "CronTrainJob", "metadata": {"name": "nightly", "namespace": "ml"},
     "spec": {"schedule": "0 1 * * *", "jobTemplate": {"spec": {
         "parallelism": 2, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}},
                                          "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]}},
         "template": {"spec": {"restartPolicy": "Never", "containers": CONTAINER}}}}}},
]
PROFILE = "job-template:CronTrainJob.example.com:spec.jobTemplate.spec"


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.run([sys.executable, "-m", "webhook", "render", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=120)


def _seeded() -> list[dict]:
    """The seeded creates the engine allows, rendered by the library (as the oracle's embeddings are configured)."""
    out = []
    for c in generate(20370, 4000):
        if c["oldObject"] is not None:
            continue
        req = _request(c["embedding"], c["object"], None)
        obj = copy.deepcopy(req.object)
        obj["metadata"]["name"] = f"case-{c['id']}"
        if not engine.validate(engine.Request.for_object(obj), ORACLE_CONFIG).allowed:
            continue
        rendered = render(obj, ORACLE_CONFIG)
        out += rendered.objects if rendered else []
    return out


def _kopf_example_objects() -> list[dict]:
    path = os.path.join(REPO, "examples", "kopf-operator", "trainjob_objects.py")
    spec = importlib.util.spec_from_file_location("trainjob_objects", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = []
    for i, tj in enumerate(yaml.safe_load_all(open(os.path.join(REPO, "examples", "valid", "trainjob-gang.yaml")))):
        tj["metadata"]["uid"] = f"00000000-0000-4000-8000-{i:012d}"
        out += module.objects_for(tj)
    return out


def test_rendered_objects_of_every_valid_object_are_accepted_by_kube_apiserver(kubectl, tmp_path):
    files = sorted(glob.glob(os.path.join(REPO, "examples", "valid", "*.yaml")))
    proc = _cli("--config", os.path.join(REPO, "examples", "config.yaml"), *sum((["-f", f] for f in files), []),
                "-o", "json")
    assert proc.returncode == 0, proc.stderr
    examples = json.loads(proc.stdout)["items"]
    gates = tmp_path / "gates.yaml"
    gates.write_text("featureGates: {WorkloadWithJob: true}\n")
    proc = _cli("--config", str(gates), "--profile", "jobset", "--profile", "lws", "--profile", PROFILE, "-f", "-",
                "-o", "yaml",
                stdin=yaml.safe_dump_all(EXTRA))
    assert proc.returncode == 0, proc.stderr
    extra = list(yaml.safe_load_all(proc.stdout))
    seeded = _seeded()
    kinds = {o["kind"] for o in examples + extra + seeded}
    assert kinds == {"Workload", "PodGroup", "CompositePodGroup"}, kinds
    assert len(seeded) >= 150 and sum(1 for o in extra if o["kind"] == "Workload") == 3
    job_wl = next(o for o in extra if o["kind"] == "Workload" and o["spec"]["controllerRef"]["kind"] == "Job")
    assert job_wl["spec"]["podGroupTemplates"][0] == {"name": "etl-pgt-0", "schedulingPolicy": {"gang": {"minCount": 3}},
                                                      "schedulingConstraints": None}
    operator = _kopf_example_objects()
    assert sum(1 for o in operator if o["kind"] == "Pod") == 12
    objects = examples + extra + seeded + operator
    for ns in sorted({o["metadata"].get("namespace") or "default" for o in objects}):
        kubectl("create", "namespace", ns, check=False)
    proc = kubectl("apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(objects), check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    created = [line for line in proc.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(created) == len(objects), (len(created), len(objects), proc.stdout[-2000:])
