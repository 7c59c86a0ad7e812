"""Seeded build cases for the builder's differential test (test_builder_oracle.py):
the trees of oracle_cases.py's objects (leaf and composite embeddings; a `job`
case's spec.scheduling as a leaf), each with an owner, item names, the
controller's defaults and the templates to materialize, drawn from pools that
hold the length limits: owner names of 1, 242, 243 and 253 characters (the
Workload name's room beside its hash), template names up to 63 and past it,
owner apiVersions of every form (core, grouped, unparsable), no owner at all.

The same case is built by the oracle (hack/oracle's build mode: upstream's Go)
and by webhook.builder; `python_build` is the Python side."""
from __future__ import annotations

import copy
import random
from typing import Any

from tests.e2e.oracle_cases import generate
from webhook.builder import (Builder, BuildError, BuildOptions, InvocationError, SchedulingConfig, SchedulingPolicy,
                             GangSchedulingPolicy, WorkloadInput, WorkloadItem, pod_group_name, workload_name)
from webhook.field import Path

OWNER_NAME_LENGTHS = [1, 5, 12, 63, 200, 241, 242, 243, 252, 253]
NAME_LENGTHS = [1, 3, 8, 20, 63, 64, 100, 126, 127, 200]
API_VERSIONS = ["trainer.kubeflow.org/v1alpha1", "jobset.x-k8s.io/v1alpha2", "v1", "batch/v1", "", "a/b/c",
                "leaderworkerset.x-k8s.io/v1"]


def _name(r: random.Random, length: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
    return "".join(r.choice(alphabet[:-1] if i in (0, length - 1) else alphabet) for i in range(length))


def _uid(r: random.Random) -> str:
    return "%08x-%04x-%04x-%04x-%012x" % (r.getrandbits(32), r.getrandbits(16), r.getrandbits(16),
                                          r.getrandbits(16), r.getrandbits(48))


def _defaults(r: random.Random) -> dict | None:
    roll = r.random()
    if roll < 0.35:
        return None
    out: dict = {"gang": r.random() < 0.4}
    if r.random() < 0.4:
        out["priorityClassName"] = r.choice(["high", "batch-low", "x" * 253])
    if r.random() < 0.5:
        out["minCountDefault"] = r.choice([-1, 0, 1, 3, 8])
    return out


def _leaf_names(obj: dict, embedding: str, root: str) -> tuple[list[str], list[str]]:
    """The template names a tree makes (leaves, composites), and names it does not, to ask for."""
    if embedding != "composite":
        return [root], []
    jobs = obj.get("spec", {}).get("replicatedJobs") or []
    return [j.get("name") or "" for j in jobs], [root]


def build_cases(seed: int, count: int, first_id: int = 0) -> list[dict]:
    r = random.Random(seed * 7 + 1)
    out = []
    for i, c in enumerate(generate(seed, count)):
        obj = copy.deepcopy(c["object"] if r.random() < 0.7 or c["oldObject"] is None else c["oldObject"])
        embedding = "composite" if c["embedding"] == "composite" else "leaf"
        if embedding == "composite" and r.random() < 0.3:
            for job in obj["spec"].get("replicatedJobs") or []:
                job["name"] = _name(r, r.choice(NAME_LENGTHS))
        root = _name(r, r.choice(NAME_LENGTHS)) if r.random() < 0.6 else "root"
        if embedding == "composite" and r.random() < 0.05 and obj["spec"].get("replicatedJobs"):
            root = obj["spec"]["replicatedJobs"][0].get("name") or "root"       # a repeated name
        owner = None
        if r.random() < 0.95:
            owner = {"apiVersion": r.choice(API_VERSIONS), "kind": r.choice(["TrainJob", "JobSet", "Job"]),
                     "name": _name(r, r.choice(OWNER_NAME_LENGTHS)), "uid": _uid(r)}
            if r.random() < 0.7:
                owner.update(controller=True, blockOwnerDeletion=r.random() < 0.8)
        leaves, composites = _leaf_names(obj, embedding, root)
        asked_leaves = leaves + ([root] if embedding == "composite" else []) + ["missing"] * (r.random() < 0.2)
        asked_composites = composites + (leaves[:1] if embedding == "composite" else []) + ["missing"] * (r.random() < 0.2)
        out.append({"id": first_id + i, "mode": "build", "embedding": embedding, "object": obj, "rootName": root,
                    "defaults": _defaults(r), "namespace": r.choice(["default", "ml", ""]), "owner": owner,
                    "podGroups": asked_leaves, "composites": asked_composites, "source": f"seed {seed} #{i}"})
    return out


def _default_config(defaults: dict | None) -> tuple[SchedulingConfig | None, list]:
    if defaults is None:
        return SchedulingConfig(policy=SchedulingPolicy(basic=True)), []
    policy = SchedulingPolicy(gang=GangSchedulingPolicy()) if defaults.get("gang") else SchedulingPolicy(basic=True)
    cfg = SchedulingConfig(policy=policy, priority_class_name=defaults.get("priorityClassName") or "")
    callbacks = []
    if defaults.get("minCountDefault") is not None:
        n = max(1, defaults["minCountDefault"])

        def default_min_count(c: SchedulingConfig) -> None:
            if c.policy is not None and c.policy.gang is not None and c.policy.gang.min_count is None:
                c.policy.gang.min_count = n
        callbacks.append(default_min_count)
    return cfg, callbacks


def tree(case: dict) -> WorkloadItem:
    """The case's WorkloadItem tree, as hack/oracle's leafItem / compositeItem build it."""
    spec = case["object"].get("spec") or {}
    cfg, callbacks = _default_config(case.get("defaults"))
    scheduling = Path("spec", "scheduling")
    if case["embedding"] != "composite":
        return WorkloadItem(case["rootName"], scheduling, cfg, WorkloadInput.leaf(spec.get("scheduling")),
                            list(callbacks))
    children = [WorkloadItem(job.get("name") or "", Path("spec", "replicatedJobs", i, "scheduling"), cfg,
                             WorkloadInput.leaf(job.get("scheduling")), list(callbacks))
                for i, job in enumerate(spec.get("replicatedJobs") or [])]
    return WorkloadItem(case["rootName"], scheduling, cfg, WorkloadInput.composite(spec.get("scheduling")),
                        list(callbacks), children)


def python_build(case: dict) -> dict:
    """What webhook.builder answers, in the oracle's answer's shape."""
    owner = case.get("owner")
    wl_name = workload_name(owner["name"] if owner else "", owner["uid"] if owner else "")
    answer: dict[str, Any] = {"id": case["id"], "workloadName": wl_name, "podGroups": [], "composites": []}
    b = Builder(tree(case), BuildOptions(name=wl_name, namespace=case.get("namespace") or "", owner=owner))
    try:
        answer["workload"] = b.build_workload()
    except BuildError as exc:
        answer["buildError"] = str(exc)
        return answer
    for key, make in (("podGroups", b.new_pod_group), ("composites", b.new_composite_pod_group)):
        for tpl in case[key]:
            name = pod_group_name(wl_name, tpl)
            try:
                answer[key].append({"name": name, "object": make(name, tpl)})
            except InvocationError as exc:
                answer[key].append({"name": name, "error": str(exc)})
    return answer
