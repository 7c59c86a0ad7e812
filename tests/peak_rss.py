"""Run a child and read *its own* peak RSS from the kernel (os.wait4).

`getrusage(RUSAGE_CHILDREN).ru_maxrss` is the largest of every child reaped so
far, so whatever big child ran earlier in the session decides that figure."""
from __future__ import annotations

import os
import subprocess
import threading
import time


def run(args, *, timeout: float, **kwargs) -> tuple[subprocess.CompletedProcess, float]:
    """Like subprocess.run(capture_output=True, text=True); returns the result
    and the child's peak RSS in MiB. Raises subprocess.TimeoutExpired."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    chunks: dict[str, str] = {}
    readers = [threading.Thread(target=lambda n=n, f=f: chunks.__setitem__(n, f.read()), daemon=True)
               for n, f in (("out", proc.stdout), ("err", proc.stderr))]
    for r in readers:
        r.start()
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            raise subprocess.TimeoutExpired(args, timeout)
        time.sleep(0.02)
    # Reaped here: tell Popen, or its own wait() would report 0 for an unknown status.
    proc.returncode = os.waitstatus_to_exitcode(status)
    for r in readers:
        r.join()
    return subprocess.CompletedProcess(args, proc.returncode, chunks.get("out", ""), chunks.get("err", "")), \
        usage.ru_maxrss / 1024
