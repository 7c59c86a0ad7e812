"""The memory bounds of the CLI tests read each child's own peak, not the
largest child reaped so far in the session."""
import sys

from tests import peak_rss


def test_a_small_child_after_a_big_one_reports_its_own_peak():
    big, big_mib = peak_rss.run([sys.executable, "-c", "b = bytearray(300 * 1024 * 1024); print(len(b))"], timeout=60)
    small, small_mib = peak_rss.run([sys.executable, "-c", "print('ok')"], timeout=60)
    assert big.returncode == 0 and small.stdout.strip() == "ok"
    assert big_mib > 290, big_mib
    assert small_mib < 100, small_mib


def test_exit_status_and_output_are_the_childs():
    proc, _ = peak_rss.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
                           timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "out\n", "err\n")


def test_a_big_parent_does_not_make_its_child_look_big():
    ballast = bytearray(400 * 1024 * 1024)       # this process's high-water mark rises by 400 MiB
    ballast[::4096] = b"x" * len(ballast[::4096])
    _, mib = peak_rss.run([sys.executable, "-c", "pass"], timeout=60)
    assert mib < 100, mib
    del ballast
