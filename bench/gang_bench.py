"""Gang model benchmark: what the live gang model (webhook/gangs/) holds per Pod and per
PodGroup, fed as it is in the service: the one list-and-watch loop (webhook/cluster/watch.py)
LISTing pages of JSON bytes (as kube-apiserver answers them: Pods with their containers,
conditions and status) into the model's stores, through a transport of its own (no server:
what is measured is the store, not the client). Prints the bytes kept per PodGroup and per
Pod (tracemalloc: what the stores retain once the LIST's pages are gone) and the time of the
model's first step over every gang. With --rss, tracemalloc stays off (its own traces would
count) and the process's RSS growth is printed instead: the allocator's share included.

    python bench/gang_bench.py [--pods 100000] [--gang 8] [--nodes 500] [--rss] [--json FILE]"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from webhook.cluster.api import Api  # noqa: E402
from webhook.cluster.watch import ListWatch  # noqa: E402
from webhook.config import GangSettings  # noqa: E402
from webhook.gangs.model import Model  # noqa: E402
from webhook.gangs.store import PodGroupStore, PodStore  # noqa: E402

PAGE = 500


def podgroup(i: int) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": f"job-{i:06d}", "namespace": f"team-{i % 100:02d}", "uid": f"{i:08d}-aaaa-bbbb-cccc-dddddddddddd",
                         "resourceVersion": str(1000 + i), "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"app": "train", "job-name": f"job-{i:06d}"}},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 8}}},
            "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled",
                                       "message": "", "lastTransitionTime": "2026-01-01T00:00:05Z"}]}}


def pod(i: int, gang: int, nodes: int) -> dict:
    g = i // gang
    running = i % 10 != 0
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"job-{g:06d}-{i % gang}-x7k2p", "namespace": f"team-{g % 100:02d}",
                         "uid": f"{i:08d}-1111-2222-3333-444444444444", "resourceVersion": str(500000 + i),
                         "creationTimestamp": "2026-01-01T00:00:01Z",
                         "labels": {"job-name": f"job-{g:06d}", "scheduling.k8s.io/group-name": f"job-{g:06d}"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"job-{g:06d}",
                                              "uid": "0000", "controller": True}]},
            "spec": {"containers": [{"name": "train", "image": "registry.example/train:1.2",
                                     "resources": {"requests": {"cpu": "4", "memory": "16Gi"}}}],
                     "schedulingGroup": {"podGroupName": f"job-{g:06d}"},
                     **({"nodeName": f"node-{i % nodes:04d}"} if running else {}), "restartPolicy": "Never"},
            "status": {"phase": "Running" if running else "Pending",
                       "conditions": [{"type": "PodScheduled", "status": "True" if running else "False",
                                       **({} if running else {"reason": "Unschedulable",
                                                              "message": "0/500 nodes are available"})}]}}


class Reply:
    """One answer of a transport of the benchmarks' own (no server: the store or the writer is measured)."""

    def __init__(self, body: bytes, status: int = 200, reason: str = "OK"):
        self.status, self.reason, self.body = status, reason, body

    def read(self) -> bytes:
        return self.body

    def chunks(self):
        yield from ()

    def close(self) -> None:
        pass


class Pages:
    """A transport answering a paginated LIST of `count` objects made by `make`, page by page."""

    def __init__(self, count: int, make):
        self.count, self.make = count, make

    def send(self, method, path, query, headers, body, timeout):
        q = dict(query)
        start = int(q.get("continue") or 0)
        end = min(self.count, start + int(q.get("limit") or PAGE))
        meta = {"resourceVersion": "900000", **({"continue": str(end)} if end < self.count else {})}
        return Reply(json.dumps({"metadata": meta, "items": [self.make(i) for i in range(start, end)]}).encode())


def listed(store, count: int, make, path: str) -> None:
    ListWatch(Api(Pages(count, make)), path, store, page_size=PAGE).list()


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def rss(a, groups: int) -> dict:
    """The RSS the stores and the model's first step add, without tracemalloc."""
    model = Model(GangSettings(model=True))
    gc.collect()
    base = rss_kib()
    listed(PodGroupStore(model.gangs), groups, podgroup, "/apis/scheduling.k8s.io/v1beta1/podgroups")
    listed(PodStore(model.gangs), a.pods, lambda i: pod(i, a.gang, a.nodes), "/api/v1/pods")
    model.step()
    gc.collect()
    grown = rss_kib() - base
    return {"pods": a.pods, "podgroups": groups, "nodes": a.nodes, "rss_mib": round(grown / 1024, 1),
            "rss_kib_per_pod": round(grown / a.pods, 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=100_000)
    p.add_argument("--gang", type=int, default=8, help="Pods per PodGroup")
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--rss", action="store_true", help="the RSS growth, without tracemalloc")
    p.add_argument("--json")
    a = p.parse_args()
    groups = (a.pods + a.gang - 1) // a.gang
    if a.rss:
        out = rss(a, groups)
        print(f"{a.pods:,} Pods in {groups:,} PodGroups on {a.nodes} nodes: RSS grew by {out['rss_mib']} MiB, "
              f"{out['rss_kib_per_pod']} KiB a Pod with its PodGroups and the model's first step")
        if a.json:
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump(out, f, indent=2)
        return 0
    model = Model(GangSettings(model=True))
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    listed(PodGroupStore(model.gangs), groups, podgroup, "/apis/scheduling.k8s.io/v1beta1/podgroups")
    gc.collect()
    after_groups = tracemalloc.get_traced_memory()[0]
    listed(PodStore(model.gangs), a.pods, lambda i: pod(i, a.gang, a.nodes), "/api/v1/pods")
    gc.collect()
    after_pods = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    model.step()
    step = time.perf_counter() - started
    gc.collect()
    after_step = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    out = {"pods": a.pods, "podgroups": groups, "nodes": a.nodes,
           "bytes_per_podgroup": round((after_groups - base) / groups, 1),
           "bytes_per_pod": round((after_pods - after_groups) / a.pods, 1),
           "model_bytes_per_gang": round((after_step - after_pods) / groups, 1),
           "total_mib": round((after_step - base) / 2 ** 20, 1), "first_step_seconds": round(step, 3)}
    print(f"{a.pods:,} Pods in {groups:,} PodGroups on {a.nodes} nodes: {out['bytes_per_pod']} bytes per Pod, "
          f"{out['bytes_per_podgroup']} bytes per PodGroup (+ {out['model_bytes_per_gang']} bytes per gang of the "
          f"model's memory), {out['total_mib']} MiB in all; first step {out['first_step_seconds']} s")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
