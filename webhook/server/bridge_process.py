"""The bridge's own process, started and watched by the gunicorn master.

Not a thread of the master: gunicorn forks its workers from the master, and a fork
copies every lock as it was at that instant. A worker forked while the loop's thread
was importing one of the kubernetes client's lazily loaded classes inherited that
module's import lock held and hung on its first import of it (seen: 1 start in 4 in
tests/e2e/test_bridge.py). A process of its own shares no lock with the workers; the
master keeps only a thread that restarts it if it dies (os.kill(pid, 0): gunicorn's
SIGCHLD handler reaps any child, so waitpid cannot be relied on) and stops it at exit,
when it gives its Lease up.

The live gang model (webhook/gangs/model.py, `gangs.model`) runs in this process too, under
the same Lease and identity: with a bridge dialect on it follows the bridge's loop (it reads
the Lease, never writes it), without one it holds the Lease itself. Its metrics reach the
master's /metrics through the multiprocess directory this process inherits; the supervisor
drops a dead process's gauges.

    python3 -m webhook.server.bridge_process --cluster auto --settings '{...}' [--gangs '{...}']"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import threading

log = logging.getLogger("workload_webhook.bridge")
CHECK_SECONDS = 2.0
MAX_BACKOFF = 60.0


def main(argv: list[str] | None = None) -> int:
    from webhook.bridge.loop import Bridge
    from webhook.cluster.cache import api_client
    from webhook.view import ClusterUnavailable
    from webhook.config import BridgeSettings
    from webhook.server import logs
    p = argparse.ArgumentParser(prog="python3 -m webhook.server.bridge_process")
    p.add_argument("--cluster", default="auto")
    p.add_argument("--kubeconfig")
    p.add_argument("--settings", required=True, help="bridge settings as JSON (webhook.config.BridgeSettings)")
    p.add_argument("--gangs", help="the live gang model's settings as JSON (webhook.config.GangSettings); "
                   "absent: off")
    p.add_argument("--log-level", default="info")
    p.add_argument("--log-format", default="json")
    args = p.parse_args(argv)
    logs.setup(args.log_level, args.log_format)
    raw = json.loads(args.settings)
    settings = BridgeSettings(**{**raw, "schedulerNames": tuple(raw.get("schedulerNames") or ())})
    try:
        api = api_client(args.cluster, args.kubeconfig)
    except ClusterUnavailable as exc:
        log.warning("bridge: %s", exc)
        return 2
    if api is None:
        log.warning("bridge: on, but there is no cluster to reconcile")
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    bridge = Bridge(api, settings)
    gangs = _gang_runner(api, bridge, args.gangs)
    if not settings.dialects:                   # the model alone: it holds the Lease
        gangs.run(stop)
        return 0
    if gangs is not None:
        threading.Thread(target=gangs.run, args=(stop,), name="gangs", daemon=True).start()
    bridge.run(stop)                            # gives the Lease up once stopped
    return 0


def _gang_runner(api, bridge, raw: str | None):
    """The live gang model on the bridge's Lease (its identity), or None when it is off."""
    from webhook.config import GangSettings
    if not raw:
        return None
    from webhook.gangs.model import Following, Runner
    lease = bridge.lease if not bridge.settings.dialects else Following(bridge.lease)
    return Runner(api, GangSettings(**json.loads(raw)), lease, bridge.settings.leaseDurationSeconds,
                  bridge.identity)


class Supervisor:
    """In the master: the bridge process, restarted (with backoff) when it dies."""

    def __init__(self, cluster: str, kubeconfig: str | None, settings, log_level: str, log_format: str,
                 gangs=None):
        self.argv = [sys.executable, "-m", "webhook.server.bridge_process", "--cluster", cluster,
                     "--settings", json.dumps(dataclasses.asdict(settings)), "--log-level", log_level,
                     "--log-format", log_format, *(["--kubeconfig", kubeconfig] if kubeconfig else []),
                     *(["--gangs", json.dumps(dataclasses.asdict(gangs))] if gangs is not None and gangs.model
                       else [])]
        self.proc: subprocess.Popen | None = None
        self._stopped = threading.Event()
        self.restarts = 0

    def _spawn(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL)

    def _forget(self) -> None:
        """A dead process's live gauges (the gang model's) leave the master's /metrics."""
        if self.proc is not None and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess
            multiprocess.mark_process_dead(self.proc.pid)

    def _alive(self) -> bool:
        try:
            os.kill(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        try:                              # reaped by us or a zombie: gone
            return os.waitpid(self.proc.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False

    def _watch(self) -> None:
        backoff = 1.0
        while not self._stopped.wait(CHECK_SECONDS):
            if self._alive():
                backoff = 1.0
                continue
            log.warning("bridge: its process %s ended; starting it again in %.0f s", self.proc.pid, backoff)
            if self._stopped.wait(backoff):
                return
            backoff = min(backoff * 2, MAX_BACKOFF)
            self._forget()
            self.restarts += 1
            self._spawn()

    def start(self) -> "Supervisor":
        self._spawn()
        threading.Thread(target=self._watch, name="bridge-supervisor", daemon=True).start()
        return self

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM (the process gives its Lease up), then SIGKILL after `grace`."""
        self._stopped.set()
        if self.proc is None or not self._alive():
            return
        self.proc.terminate()
        try:
            self.proc.wait(grace)
        except (subprocess.TimeoutExpired, ChildProcessError):
            if self._alive():
                self.proc.kill()
        self._forget()


if __name__ == "__main__":
    sys.exit(main())
