"""The master's supervision of the bridge's process (webhook/server/bridge_process.py),
with real child processes: restarted when it dies, stopped (SIGTERM first) at exit."""
import os
import signal
import sys
import time

from webhook import config as config_mod
from webhook.server import bridge_process


def supervisor(monkeypatch, script: str) -> bridge_process.Supervisor:
    monkeypatch.setattr(bridge_process, "CHECK_SECONDS", 0.05)
    s = bridge_process.Supervisor("disabled", None, config_mod.from_dict({"bridge": {"volcano": True}}).bridge,
                                  "info", "json")
    assert s.argv[1:3] == ["-m", "webhook.server.bridge_process"] and '"volcano": true' in s.argv[s.argv.index(
        "--settings") + 1]
    s.argv = [sys.executable, "-c", script]
    return s


def wait(check, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_a_bridge_process_that_dies_is_started_again(monkeypatch):
    s = supervisor(monkeypatch, "import time; time.sleep(60)").start()
    try:
        first = s.proc.pid
        os.kill(first, signal.SIGKILL)
        assert wait(lambda: s.restarts == 1 and s.proc.pid != first and s._alive())
    finally:
        s.stop()
    assert not s._alive()


def test_stop_sends_sigterm_and_the_process_may_finish(monkeypatch, tmp_path):
    done = tmp_path / "released"
    script = (f"import signal, sys, time\n"
              f"signal.signal(signal.SIGTERM, lambda *a: (open({str(done)!r}, 'w').write('yes'), sys.exit(0)))\n"
              f"time.sleep(60)")
    s = supervisor(monkeypatch, script).start()
    time.sleep(0.3)                      # the handler is installed
    s.stop()
    assert done.read_text() == "yes" and not s._alive() and s.restarts == 0
