"""Benchmark: `workload-webhook validate` throughput on files, as CI runs it.

Two kinds of input, each as multi-document YAML and as a JSON `kind: List`:
- `helm`: `helm template`-shaped output (per release a ServiceAccount, a
  ConfigMap, a Service and a Deployment, and every fourth release a JobSet, a
  TrainJob, a Workload and a PodGroup that the rules judge);
- `trainjobs`: nothing but TrainJobs, every one judged (the document of
  tests/unit/test_cli_hostile.py's five megabytes).
The real command runs on each in a subprocess (`python -m webhook validate
--config examples/config.yaml -f F -o json`); printed: wall seconds,
documents/s, the CPU seconds of the command and its children (reading a large
stream uses more than one core), and the reference measured in the same run:
`yaml.load_all` with libyaml's CSafeLoader (`json.loads` for JSON) of the same
bytes, with nothing judged. A benchmark, not a test: it asserts nothing.

    python bench/validate_bench.py [--sizes 5,50] [--inputs helm-yaml,helm-json,trainjobs-yaml,trainjobs-json] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def release(i: int) -> list[dict]:
    """The documents of one chart release, as `helm template` prints them."""
    name, ns = f"app-{i}", f"team-{i % 40}"
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": f"rel-{i}",
              "app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "app-1.4.2"}
    docs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns, "labels": labels}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config", "namespace": ns, "labels": labels},
         "data": {"LOG_LEVEL": "info", "WORKERS": "4", "settings.yaml": "cache:\n  size: 512\n  ttl: 30s\n"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "labels": labels},
         "spec": {"type": "ClusterIP", "selector": {"app.kubernetes.io/name": name},
                  "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns, "labels": labels},
         "spec": {"replicas": 2, "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                  "template": {"metadata": {"labels": labels}, "spec": {
                      "serviceAccountName": name,
                      "containers": [{"name": "app", "image": f"registry.example.com/{name}:1.4.2",
                                      "ports": [{"name": "http", "containerPort": 8080}],
                                      "envFrom": [{"configMapRef": {"name": f"{name}-config"}}],
                                      "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                                    "limits": {"memory": "256Mi"}},
                                      "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}}}]}}}},
    ]
    if i % 4 == 0:
        pod = {"spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": "registry.example.com/t:1"}]}}
        docs += [
            {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": f"{name}-js", "namespace": ns},
             "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2,
                                          "template": {"spec": {"parallelism": 4, "template": pod}}}],
                      "scheduling": {"schedulingPolicy": {"gang": {"minCount": 8}}}}},
            {"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob",
             "metadata": {"name": f"{name}-tj", "namespace": ns},
             "spec": {"replicas": 8, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 8}},
                                                    "disruptionMode": {"all": {}}}}},
            {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": f"{name}-w", "namespace": ns},
             "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 8}}}]}},
            {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": f"{name}-pg", "namespace": ns},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 8}}}},
        ]
    return docs


def trainjobs(i: int) -> list[dict]:
    """The TrainJob of tests/unit/test_cli_hostile.py, judged (and valid) every time."""
    return [{"apiVersion": "training.example.com/v1alpha1", "kind": "TrainJob",
             "metadata": {"name": f"t-{i}", "namespace": "ml"},
             "spec": {"replicas": 4, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 4}}},
                      "padding": ["0123456789"] * 40}}]


MAKERS = {"helm": release, "trainjobs": trainjobs}


def yaml_stream(make, megabytes: float) -> tuple[str, int]:
    """About `megabytes` MB of documents, as `helm template` prints them: the text and the count."""
    parts, size, count, i = [], 0, 0, 0
    while size < megabytes * 1e6:
        for doc in make(i):
            text = f"---\n# Source: app/templates/{doc['kind'].lower()}.yaml\n" + yaml.safe_dump(
                doc, sort_keys=False, default_flow_style=None)
            parts.append(text)
            size += len(text)
            count += 1
        i += 1
    return "".join(parts), count


def json_list(make, megabytes: float) -> tuple[str, int]:
    items, size, i = [], 0, 0
    while size < megabytes * 1e6:
        for doc in make(i):
            items.append(doc)
            size += len(json.dumps(doc, indent=2))
        i += 1
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2), len(items)


def reference_seconds(path: str) -> float:
    """Reading the file with libyaml (or the standard library's JSON), nothing judged."""
    start = time.perf_counter()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".json"):
        json.loads(text)
    else:
        for _ in yaml.load_all(text, Loader=yaml.CSafeLoader):
            pass
    return time.perf_counter() - start


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def validate_seconds(path: str) -> tuple[float, float, int, int]:
    """The real command in a subprocess: wall and CPU seconds, exit code, records printed."""
    argv = [sys.executable, "-m", "webhook", "validate", "--config", os.path.join(ROOT, "examples", "config.yaml"),
            "-f", path, "-o", "json"]
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    elapsed, cpu = time.perf_counter() - start, _children_cpu() - cpu
    return elapsed, cpu, proc.returncode, len(json.loads(proc.stdout)) if proc.stdout.startswith("[") else -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5,50", help="megabytes of input, comma-separated")
    parser.add_argument("--inputs", default="helm-yaml,helm-json,trainjobs-yaml,trainjobs-json",
                        help="KIND-FORMAT, comma-separated: helm or trainjobs, yaml (a stream) or json (a List)")
    parser.add_argument("--keep", metavar="DIR", help="write the inputs here and keep them")
    args = parser.parse_args()
    where = args.keep or tempfile.mkdtemp(prefix="validate-bench-")
    os.makedirs(where, exist_ok=True)
    print(f"{'input':<26} {'documents':>10} {'wall s':>7} {'docs/s':>8} {'CPU s':>6} {'read-only s':>12} "
          f"{'x read-only':>12} exit")
    for name in args.inputs.split(","):
        kind, _, fmt = name.partition("-")
        for mb in (float(s) for s in args.sizes.split(",")):
            text, count = (yaml_stream if fmt == "yaml" else json_list)(MAKERS[kind], mb)
            path = os.path.join(where, f"{kind}-{mb:g}mb.{fmt}")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            del text
            seconds, cpu, code, records = validate_seconds(path)
            reference = reference_seconds(path)
            label = f"{mb:g} MB {kind} {'YAML stream' if fmt == 'yaml' else 'JSON List'}"
            note = "" if records == count else f" (printed {records} records)"
            print(f"{label:<26} {count:>10,} {seconds:>7.2f} {count / seconds:>8,.0f} {cpu:>6.2f} {reference:>12.2f} "
                  f"{seconds / reference:>12.2f} {code}{note}", flush=True)
            if not args.keep:
                os.remove(path)


if __name__ == "__main__":
    main()
