"""Service benchmark: `workload-webhook serve` beside two in-run references,
same certificate, same bodies, same keep-alive HTTPS load:

- go:    a Go standard-library webhook (bench/go/refwebhook: decodes the
         review, walks the object, answers allowed);
- flask: the thinnest Flask app under the very gunicorn settings of `serve`
         (bench/thin_app.py);
- ours:  `workload-webhook serve` with examples/config.yaml.

Load comes from bench/go/loadgen (Go, standard library): closed loop (fixed
concurrency) and open loop (fixed rate). Prints requests/s, p50/p99/max,
errors, CPU seconds per 1,000 requests (all processes of the server), ratios
to both references, and the worker's memory before and after; --json writes it.

    python bench/service_bench.py [--seconds 10] [--concurrency 8] [--rate 500] [--workers 2] [--json FILE]
                                  [--memory-requests 100000]

Go programs are built once into ${WW_CACHE:-~/.cache/workload-webhook}/bench.
Everything listens on 127.0.0.1 and stops by itself.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.e2e import scale  # noqa: E402
from tests.memory import family, memory_kib  # noqa: E402
from tests.server.harness import REPO, Server, admission_request, free_port  # noqa: E402
from tests.unit.helpers import pod, podgroup, template, trainjob, workload  # noqa: E402

CLAIMS = [{"name": f"c{i}", "resourceClaimTemplateName": f"t{i}"} for i in range(4)]


def bodies() -> dict[str, tuple[str, dict]]:
    label = {"scheduling.k8s.io/pod-group": "pg"}
    wide = pod(label, containers=[{"name": f"c{i}", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                                  for i in range(50)])
    deep = workload([template(f"t{i}", resourceClaims=CLAIMS, disruptionMode={"all": {}},
                              schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]})
                     for i in range(8)])
    return {
        "trainjob-validate": ("/validate", trainjob({"schedulingPolicy": {"gang": {"minCount": 4}},
                                                     "disruptionMode": {"all": {}}}, replicas=8)),
        "workload-8-templates-validate": ("/validate", workload([template(f"t{i}") for i in range(8)])),
        "pod-join-mutate": ("/mutate", pod(label)),
        "pod-50-containers-mutate": ("/mutate", wide),
        "workload-max-validate": ("/validate", deep),
        "podgroup-validate": ("/validate", podgroup()),
    }


def build_go() -> dict[str, str]:
    return {name: scale.build_go(name) for name in ("loadgen", "refwebhook")}


def tree_cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its children that are alive now."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for p in family(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


def rss_mib(pid: int) -> float:
    return memory_kib(pid)["rss"] / 1024


class Proc:
    """A reference server in its own session, stopped with its children."""

    def __init__(self, args: list[str], port: int, ca: str, log: str):
        self.port, self.ca = port, ca
        self._log = open(log, "ab")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
                                     cwd=REPO)
        deadline = time.monotonic() + 30
        import socket
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                time.sleep(1.0)                 # all workers booted
                return
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"{args[0]} did not start; see {log}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


def load(loadgen: str, port: int, ca: str, body: str, path: str, seconds: float, concurrency: int = 0,
         rate: float = 0, requests: int = 0) -> dict:
    args = [loadgen, "-url", f"https://127.0.0.1:{port}{path}", "-ca", ca, "-body", body,
            "-duration", f"{seconds}s"]
    args += ["-rate", str(rate)] if rate else ["-concurrency", str(concurrency)]
    if requests:
        args += ["-requests", str(requests)]
    out = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 120)
    if out.returncode != 0:
        raise SystemExit(f"loadgen failed: {out.stderr}")
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--rate", type=float, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-requests", type=int, default=100_000)
    ap.add_argument("--only", help="comma-separated body names")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    go = build_go()
    rows, memory = [], {}
    with tempfile.TemporaryDirectory(prefix="service-bench-") as work:
        ours = Server(work, config=f"{REPO}/examples/config.yaml", workers=args.workers,
                      extra=["--cluster", "disabled"]).start()
        ca, crt, key = (os.path.join(ours.cert_dir, n) for n in ("ca.crt", "tls.crt", "tls.key"))
        refs = {}
        try:
            port = free_port()
            refs["go"] = Proc([go["refwebhook"], "-addr", f"127.0.0.1:{port}", "-cert", crt, "-key", key],
                              port, ca, os.path.join(work, "go.log"))
            port = free_port()
            refs["flask"] = Proc([sys.executable, os.path.join(REPO, "bench", "thin_app.py"), "--port", str(port),
                                  "--cert-dir", ours.cert_dir, "--workers", str(args.workers)],
                                 port, ca, os.path.join(work, "flask.log"))
            servers = {"go": (refs["go"].port, refs["go"].pid), "flask": (refs["flask"].port, refs["flask"].pid),
                       "ours": (ours.port, ours.proc.pid)}
            chosen = bodies()
            if args.only:
                chosen = {k: v for k, v in chosen.items() if k in args.only.split(",")}
            for name, (path, obj) in chosen.items():
                body_file = os.path.join(work, f"{name}.json")
                with open(body_file, "w") as f:
                    json.dump({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                               "request": admission_request(obj)}, f)
                for mode in ("closed", "open"):
                    line = {"body": name, "mode": mode}
                    for server, (port, pid) in servers.items():
                        cpu = tree_cpu_seconds(pid)
                        r = load(go["loadgen"], port, ca, body_file, path, args.seconds,
                                 concurrency=args.concurrency if mode == "closed" else 0,
                                 rate=args.rate if mode == "open" else 0)
                        r["cpu_s_per_1k"] = round((tree_cpu_seconds(pid) - cpu) / max(r["requests"], 1) * 1000, 3)
                        line[server] = r
                    line["ours_vs_flask"] = round(line["ours"]["rps"] / line["flask"]["rps"], 2)
                    line["ours_vs_go"] = round(line["ours"]["rps"] / line["go"]["rps"], 2)
                    rows.append(line)
                    print(json.dumps(line), file=sys.stderr)
            if args.memory_requests:
                body_file = os.path.join(work, "pod-join-mutate.json")
                with open(body_file, "w") as f:
                    json.dump({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                               "request": admission_request(pod({"scheduling.k8s.io/pod-group": "pg"}))}, f)
                workers = ours.workers()
                load(go["loadgen"], ours.port, ca, body_file, "/mutate", 600, concurrency=args.concurrency,
                     requests=2000)
                before = {w: rss_mib(w) for w in workers}
                r = load(go["loadgen"], ours.port, ca, body_file, "/mutate", 600, concurrency=args.concurrency,
                         requests=args.memory_requests)
                after = {w: rss_mib(w) for w in workers}
                memory = {"requests": r["requests"], "errors": r["errors"],
                          "workers": [{"pid": w, "rss_before_mib": round(before[w], 1),
                                       "rss_after_mib": round(after[w], 1),
                                       "change_pct": round((after[w] - before[w]) / before[w] * 100, 1)}
                                      for w in workers]}
        finally:
            for ref in refs.values():
                ref.stop()
            ours.stop()
    print(f"{'body':<30} {'mode':<6} {'server':<6} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
          f"{'>100ms':>6} {'errors':>6} {'CPU s/1k':>8}")
    for line in rows:
        for server in ("go", "flask", "ours"):
            r = line[server]
            print(f"{line['body']:<30} {line['mode']:<6} {server:<6} {r['rps']:>8.0f} {r['p50_ms']:>7.2f} "
                  f"{r['p99_ms']:>7.2f} {r['max_ms']:>7.1f} {r['over_100ms']:>6} {r['errors']:>6} "
                  f"{r['cpu_s_per_1k']:>8.3f}")
        print(f"{'':<30} {'':<6} ours/flask {line['ours_vs_flask']:.2f}   ours/go {line['ours_vs_go']:.2f}")
    if memory:
        print(f"worker memory over {memory['requests']} mutate requests ({memory['errors']} errors): " +
              ", ".join(f"pid {w['pid']}: {w['rss_before_mib']} -> {w['rss_after_mib']} MiB ({w['change_pct']:+}%)"
                        for w in memory["workers"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "memory": memory}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
