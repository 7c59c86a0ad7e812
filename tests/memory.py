"""The memory of processes the tests and the benchmarks start, the one sampler of both.

- `peak(args)`: run a child and read *its own* peak RSS from the kernel
  (os.wait4). `getrusage(RUSAGE_CHILDREN).ru_maxrss` is the largest of every
  child reaped so far, so whatever big child ran earlier decides that figure.
  And a child's own ru_maxrss starts at its parent's high-water mark (exec
  keeps the larger of the old and new address space's), so a child of a big
  pytest process looks big. Hence a small launcher process forks the child
  and reports the wait4 figure.
- `memory_kib(pid)`, `family(pid)`, `serve_memory(master)`: what a running
  process (and its children: gunicorn's master and workers) holds now, RSS
  and PSS from /proc."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

# The launcher: fork, exec the command, wait4, write {"status", "maxrss_kib"} to the given fd.
LAUNCHER = """
import json, os, sys
fd = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.close(fd)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(fd, json.dumps({"status": status, "maxrss_kib": usage.ru_maxrss}).encode())
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def peak(args, *, timeout: float, **kwargs) -> tuple[subprocess.CompletedProcess, float]:
    """Like subprocess.run(capture_output=True, text=True); returns the result
    and the child's peak RSS in MiB. Raises subprocess.TimeoutExpired."""
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-S", "-c", LAUNCHER, str(write_end), *map(str, args)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=(write_end,),
                                start_new_session=True, **kwargs)
        os.close(write_end)
        write_end = -1
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        with os.fdopen(read_end, "rb") as f:
            read_end = -1
            report = json.loads(f.read() or b"{}")
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
    if "status" not in report:
        raise RuntimeError(f"the launcher reported nothing (exit {proc.returncode}): {err[-2000:]}")
    code = os.waitstatus_to_exitcode(report["status"])
    return subprocess.CompletedProcess(args, code, out, err), report["maxrss_kib"] / 1024


# --- what running processes hold now

def family(pid: int) -> list[int]:
    """The process and its children (gunicorn's master and workers)."""
    out = [pid]
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(p))
            except (OSError, IndexError, ValueError):
                pass
    return out


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and Pss of one process, KiB (Pss counts a page shared by n processes as 1/n)."""
    out = {"rss": 0, "pss": 0}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                out["rss"] = int(line.split()[1])
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    out["pss"] = int(line.split()[1])
    except OSError:
        pass
    return out


def serve_memory(master: int) -> dict:
    """{'master': {...}, 'workers': [{...}], 'rss_mib', 'pss_mib'}: totals over master + workers."""
    procs = {p: memory_kib(p) for p in family(master)}
    workers = [dict(pid=p, **m) for p, m in sorted(procs.items()) if p != master]
    return {"master": procs[master], "workers": workers,
            "rss_mib": round(sum(m["rss"] for m in procs.values()) / 1024, 1),
            "pss_mib": round(sum(m["pss"] for m in procs.values()) / 1024, 1)}
