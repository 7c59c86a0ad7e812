"""A cluster with many jobs, for the scale e2e test and bench/scale_bench.py:
one Workload and one PodGroup per job (the job controller's order), with a DRA
claim, spread over namespaces; and when the `serve` processes' caches synced
(the informers' log lines; what they hold: tests/memory.py).

Jobs are written into etcd in transactions (etcd-friendly batches: 100,000 jobs
in about 30 s; through kube-apiserver, creates run at about 600 objects/s on two
cores). Each value is a byte copy of job 0 exactly as kube-apiserver created and
stored it: protobuf, defaults, finalizer and managed fields included. Names, the
namespace and the uid have a fixed width, so a copy differs from job 0 only in
those bytes and stays a valid encoding. kube-apiserver's watch cache reads the
copies from etcd like any write."""
from __future__ import annotations

import base64
import http.client
import json
import os
import subprocess
import threading
import time
import urllib.request
import uuid

from tests.server.harness import REPO

CACHE = os.path.join(os.environ.get("WW_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "workload-webhook"), "bench")
GROUP = "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}"
CLAIM = {"name": "gpu", "resourceClaimTemplateName": "gpus"}
MAX_NAMESPACES = 100
SYNCED = "synced"          # the informer's log line: "<plural> synced: N objects ..."
TXN_OPS = 128              # etcd's default --max-txn-ops
PROTOBUF = "application/vnd.kubernetes.protobuf"


def build_go(name: str) -> str:
    """bench/go/<name> built once into the cache directory (outside git), again when a
    source of the module (its own or the shared webhookserver package) is newer."""
    target = os.path.join(CACHE, name)
    module = os.path.join(REPO, "bench", "go")
    newest = max(os.path.getmtime(os.path.join(d, f)) for d, _, files in os.walk(module) for f in files
                 if f.endswith(".go") or f == "go.mod")
    if not os.path.exists(target) or os.path.getmtime(target) < newest:
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run(["go", "build", "-o", target, f"./{name}"], cwd=os.path.join(REPO, "bench", "go"),
                       check=True, timeout=600)
    return target


def namespace(i: int) -> str:
    return f"scale-{i % MAX_NAMESPACES:02d}"


def job(i: int) -> str:
    return f"job-{i:06d}"


def workload(i: int) -> dict:
    name = job(i)
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace(i),
                         "labels": {"app": "scale", "batch.kubernetes.io/job-name": name}},
            "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": name},
                     "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}},
                                            "resourceClaims": [CLAIM]}]}}


def podgroup(i: int) -> dict:
    name = job(i)
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": f"{name}-workers", "namespace": namespace(i),
                         "labels": {"app": "scale", "batch.kubernetes.io/job-name": name}},
            "spec": {"workloadRef": {"workloadName": name, "templateName": "workers"},
                     "schedulingPolicy": {"gang": {"minCount": 4}}, "resourceClaims": [CLAIM]}}


def _api(cp, method: str, path: str, body: dict | None = None, accept: str = "application/json") -> bytes:
    conn = http.client.HTTPSConnection("127.0.0.1", cp.port, context=cp.ssl_context("admin"), timeout=60)
    try:
        conn.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                     headers={"Content-Type": "application/json", "Accept": accept,
                              "User-Agent": "kube-controller-manager/v1.37.2 (linux/amd64) job-controller"})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status not in (200, 201, 409):
            raise RuntimeError(f"{method} {path}: {resp.status} {data[:300]!r}")
        return data
    finally:
        conn.close()


def create_namespaces(cp, count: int = MAX_NAMESPACES) -> None:
    for i in range(count):
        _api(cp, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": namespace(i)}})


def _etcd(cp, path: str, body: dict) -> dict:
    req = urllib.request.Request(cp.etcd_url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _etcd_key(cp, ns: str, name: str, plural: str) -> bytes:
    """Where kube-apiserver keeps this object in etcd (found, not assumed)."""
    found = _etcd(cp, "/v3/kv/range", {"key": _b64(b"/"), "range_end": _b64(b"0"), "keys_only": True,
                                       "limit": 1_000_000})
    suffix = f"/{ns}/{name}".encode()
    keys = [base64.b64decode(kv["key"]) for kv in found.get("kvs", [])]
    match = [k for k in keys if k.endswith(suffix) and plural.encode() in k]
    if len(match) != 1:
        raise RuntimeError(f"no single etcd key for {plural} {suffix!r}: {match}")
    return match[0]


def clone_jobs(cp, start: int, stop: int, threads: int = 4, timeout: float = 600) -> dict:
    """Jobs [start, stop) into etcd, TXN_OPS puts a transaction, each a copy of job 0
    (created through kube-apiserver first when it is not there). Returns counts."""
    if stop > 10 ** 6:
        raise ValueError("job names have six digits")
    templates = []
    for plural, build in (("workloads", workload), ("podgroups", podgroup)):
        obj = build(0)
        path = f"{GROUP.format(ns=namespace(0))}/{plural}"
        _api(cp, "POST", path, obj)
        stored = _api(cp, "GET", f"{path}/{obj['metadata']['name']}", accept=PROTOBUF)
        uid = json.loads(_api(cp, "GET", f"{path}/{obj['metadata']['name']}"))["metadata"]["uid"].encode()
        if not stored.startswith(b"k8s\x00") or stored.count(uid) != 1:
            raise RuntimeError(f"unexpected protobuf of {plural}: {stored[:40]!r}")
        templates.append((_etcd_key(cp, namespace(0), obj["metadata"]["name"], plural), stored, uid))
    todo = iter(range(max(start, 1), stop))
    lock, errors, written = threading.Lock(), [], [0]
    deadline = time.monotonic() + timeout

    def copy(data: bytes, i: int, uid: bytes) -> bytes:
        return (data.replace(job(0).encode(), job(i).encode())
                .replace(namespace(0).encode(), namespace(i).encode())
                .replace(uid, str(uuid.uuid4()).encode()))

    def writer() -> None:
        while time.monotonic() < deadline and not errors:
            with lock:
                batch = [i for _, i in zip(range(TXN_OPS // len(templates)), todo)]
            if not batch:
                return
            ops = [{"requestPut": {"key": _b64(copy(key, i, uid)), "value": _b64(copy(value, i, uid))}}
                   for i in batch for key, value, uid in templates]
            try:
                _etcd(cp, "/v3/kv/txn", {"success": ops})
            except OSError as exc:
                errors.append(repr(exc))
                return
            with lock:
                written[0] += len(ops)

    started = time.monotonic()
    pool = [threading.Thread(target=writer, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout + 60)
    seconds = time.monotonic() - started
    if errors:
        raise RuntimeError(f"etcd writes failed: {errors[0]}")
    return {"written": written[0], "seconds": round(seconds, 2), "objects_per_s": round(written[0] / max(seconds, 1e-9))}


def wait_listed(cp, plural: str, count: int, timeout: float = 120) -> int:
    """Until kube-apiserver lists `count` objects of `plural` (its watch cache has read etcd's writes)."""
    deadline, seen = time.monotonic() + timeout, -1
    while time.monotonic() < deadline:
        page = json.loads(_api(cp, "GET", f"/apis/scheduling.k8s.io/v1beta1/{plural}?limit=1"))
        seen = len(page["items"]) + (page["metadata"].get("remainingItemCount") or 0)
        if seen >= count:
            return seen
        time.sleep(0.2)
    raise RuntimeError(f"kube-apiserver lists {seen} {plural}, not {count}, after {timeout:g} s")


def synced_lines(log_path: str, offset: int = 0) -> list[dict]:
    """The informers' `synced` log lines (JSON logs) written after `offset`."""
    out = []
    try:
        with open(log_path, "rb") as f:
            f.seek(offset)
            for raw in f:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(line, dict) and f" {SYNCED}:" in str(line.get("msg", "")):
                    out.append(line)
    except OSError:
        pass
    return out


def wait_synced(log_path: str, offset: int, expected: int, timeout: float) -> tuple[float | None, list[dict]]:
    """Seconds until `expected` synced lines appeared (None if not within `timeout`), and the lines."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        lines = synced_lines(log_path, offset)
        if len(lines) >= expected:
            return time.monotonic() - started, lines
        time.sleep(0.05)
    return None, synced_lines(log_path, offset)
