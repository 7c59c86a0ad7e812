"""A fuzz of generated admission reviews against the real server (its own
layer: it takes minutes, tests/server seconds): every kind
it judges (and others), every operation, random types, huge strings, deep
nesting, broken envelopes, lone surrogate escapes and other valid-JSON oddities. No answer may be a 5xx; every patch applies
(jsonpatch) and is idempotent (the patched object, sent again, gets no patch);
every log line stays under LOG_LINE_LIMIT. Seeded and bounded in count."""
from __future__ import annotations

import base64
import copy
import json
import os
import random
import threading
import time

import jsonpatch

from tests.server.harness import REPO, Server
from tests.unit.helpers import composite_podgroup, groupjob, node_paths, pod, podgroup, template, trainjob, workload

REVIEWS = int(os.environ.get("WW_FUZZ_REVIEWS", 100_000))
CLIENTS = 4
LOG_LINE_LIMIT = 4096
SEED = int(os.environ.get("WW_FUZZ_SEED", 20261130))

SEEDS = [
    workload([template("a", disruptionMode={"all": {}}, resourceClaims=[{"name": "g", "resourceClaimName": "g"}])]),
    workload([template(f"t{i}") for i in range(8)]),
    podgroup(resourceClaims=[{"name": "g", "resourceClaimName": "g"}], workloadRef={"workloadName": "w", "templateName": "t"}),
    podgroup(version="v1alpha3"),
    composite_podgroup(),
    trainjob({"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}}}),
    trainjob({"schedulingPolicy": {"gang": {}}}, replicas=6),
    groupjob({"schedulingPolicy": {"gang": {"minGroupCount": 1}}},
             [{"replicas": 2, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}]),
    pod({"scheduling.k8s.io/pod-group": "pg"}),
    pod(None, schedulingGroup={"podGroupName": "pg"}, containers=[{"name": f"c{i}"} for i in range(50)]),
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}},
]
OPERATIONS = ["CREATE"] * 5 + ["UPDATE"] * 3 + ["DELETE", "CONNECT"]


def _value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if roll < 0.02:
        return "x" * rng.choice([10_000, 100_000, 300_000])            # huge string
    if roll < 0.03:
        node: object = {}
        for _ in range(rng.choice([50, 99, 150])):                     # deep nesting
            node = {"n": node} if rng.random() < 0.5 else [node]
        return node
    if depth < 3 and roll < 0.25:
        return {rng.choice(["gang", "basic", "minCount", "name", "all", "", "a/b~c", "ü", "\udfff", "k\ud800"]):
                _value(rng, depth + 1)
                for _ in range(rng.randint(0, 3))}
    if depth < 3 and roll < 0.4:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([None, True, False, 0, -1, 1, 2, 2**31, 2**63, 2**70, 1.5, -0.0, "", "pg", "gang",
                       "all", "x" * 300, "ÿ\u0000", "1e400",
                       # valid JSON that strict encoders refuse: lone surrogate escapes (json.dumps writes them
                       # as \\udfff), line separators, a BOM, 1e308-sized floats, long digit strings
                       "\udfff", "pg\ud800", "\ud83d", "a\u2028b", "\ufeffpg", 1e308, -1e-308, "9" * 400])


def _corrupt(rng: random.Random, seed: dict) -> object:
    obj = copy.deepcopy(seed)
    for _ in range(rng.randint(0, 3)):
        paths = [p for p in node_paths(obj) if p and p[0] not in ("apiVersion", "kind")]
        if not paths or not isinstance(obj, dict):
            break
        path = rng.choice(paths)
        node = obj
        for seg in path[:-1]:
            node = node[seg]
        node[path[-1]] = _value(rng)
    return obj


def _review(rng: random.Random, i: int) -> tuple[dict, object]:
    seed = rng.choice(SEEDS)
    group, _, version = seed["apiVersion"].rpartition("/")
    obj = _corrupt(rng, seed)
    operation = rng.choice(OPERATIONS)
    req = {"uid": f"fuzz-{i}", "kind": {"group": group, "version": version, "kind": seed["kind"]},
           "resource": {"group": group, "version": version, "resource": seed["kind"].lower() + "s"},
           "operation": operation, "namespace": "ml", "name": "x", "object": obj, "userInfo": {"username": "f"}}
    if operation == "UPDATE":
        req["oldObject"] = _corrupt(rng, seed)
    if rng.random() < 0.03:                         # a broken envelope
        key = rng.choice(["uid", "kind", "operation", "object"])
        req[key] = _value(rng)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}, obj


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.status: dict[int, int] = {}
        self.patched = self.idempotent = 0
        self.problems: list[str] = []

    def add(self, status: int) -> None:
        with self.lock:
            self.status[status] = self.status.get(status, 0) + 1

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text[:500])


def _client(server: Server, worker: int, count: int, tally: Tally, deadline: float) -> None:
    rng = random.Random(SEED * 31 + worker)
    conn = server.connection(timeout=30)
    for i in range(count):
        if time.monotonic() > deadline:
            tally.problem("time budget ran out")
            break
        review, obj = _review(rng, worker * count + i)
        path = rng.choice(["/validate", "/mutate"])
        try:
            status, _, data = server.request("POST", path, json.dumps(review).encode(),
                                             {"Content-Type": "application/json"}, conn=conn)
        except OSError as exc:
            tally.problem(f"{path} connection error {exc!r}")
            conn.close()
            conn = server.connection(timeout=30)
            continue
        tally.add(status)
        if status >= 500:
            tally.problem(f"{path} {status}: {data[:200]!r}")
            continue
        if status != 200 or path != "/mutate":
            continue
        response = json.loads(data)["response"]
        if "patch" not in response:
            continue
        ops = json.loads(base64.b64decode(response["patch"]))
        try:
            patched = jsonpatch.JsonPatch(ops).apply(obj)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            tally.problem(f"patch does not apply: {exc}: {ops}")
            continue
        review["request"]["object"] = patched
        _, _, again = server.request("POST", "/mutate", json.dumps(review).encode(),
                                     {"Content-Type": "application/json"}, conn=conn)
        with tally.lock:
            tally.patched += 1
        if "patch" in json.loads(again)["response"]:
            tally.problem(f"second patch for the patched object: {ops}")
        else:
            with tally.lock:
                tally.idempotent += 1
    conn.close()


def test_fuzzed_reviews_get_no_5xx_and_idempotent_patches(tmp_path):
    tally = Tally()
    with Server(str(tmp_path), config=f"{REPO}/examples/config.yaml",
                extra=["--cluster", "disabled", "--log-level", "debug"]) as server:
        deadline = time.monotonic() + 900
        threads = [threading.Thread(target=_client, args=(server, w, REVIEWS // CLIENTS, tally, deadline))
                   for w in range(CLIENTS)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        with open(server.log_path, encoding="utf-8", errors="replace") as f:
            longest = max((len(line) for line in f), default=0)
    total = sum(tally.status.values())
    print(f"\nfuzz: {total} reviews in {elapsed:.0f} s, statuses {dict(sorted(tally.status.items()))}, "
          f"{tally.patched} patches applied and re-sent ({tally.idempotent} idempotent), longest log line {longest}")
    assert tally.problems == [], tally.problems[:5]
    assert total == REVIEWS // CLIENTS * CLIENTS
    assert not any(s >= 500 for s in tally.status)
    assert tally.status.get(200, 0) > total * 0.9 and tally.status.get(400, 0) > 0    # both kinds of answer seen
    assert tally.patched > 0 and tally.idempotent == tally.patched
    assert longest < LOG_LINE_LIMIT
