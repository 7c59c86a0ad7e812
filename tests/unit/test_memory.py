"""tests/memory.py, the one memory sampler of the tests and benchmarks: the CLI
tests' bounds read each child's own peak, not the largest child reaped so far
in the session; a running server's processes are read from /proc."""
import os
import subprocess
import sys
import time

from tests import memory


def test_a_small_child_after_a_big_one_reports_its_own_peak():
    big, big_mib = memory.peak([sys.executable, "-c", "b = bytearray(300 * 1024 * 1024); print(len(b))"], timeout=60)
    small, small_mib = memory.peak([sys.executable, "-c", "print('ok')"], timeout=60)
    assert big.returncode == 0 and small.stdout.strip() == "ok"
    assert big_mib > 290, big_mib
    assert small_mib < 100, small_mib


def test_exit_status_and_output_are_the_childs():
    proc, _ = memory.peak([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
                           timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "out\n", "err\n")


def test_a_big_parent_does_not_make_its_child_look_big():
    ballast = bytearray(400 * 1024 * 1024)       # this process's high-water mark rises by 400 MiB
    ballast[::4096] = b"x" * len(ballast[::4096])
    _, mib = memory.peak([sys.executable, "-c", "pass"], timeout=60)
    assert mib < 100, mib
    del ballast


def test_a_running_process_and_its_children_are_sampled_from_proc():
    child = subprocess.Popen([sys.executable, "-c", "b = bytearray(64 * 1024 * 1024); import time; time.sleep(30)"],
                             stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while memory.memory_kib(child.pid)["rss"] < 64 * 1024 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.pid in memory.family(os.getpid())
        sampled = memory.serve_memory(os.getpid())
        worker = next(w for w in sampled["workers"] if w["pid"] == child.pid)
        assert worker["rss"] >= 64 * 1024 and worker["pss"] > 0
        assert sampled["rss_mib"] * 1024 >= sampled["master"]["rss"] + worker["rss"] - 1024
    finally:
        child.kill()
        child.wait()
