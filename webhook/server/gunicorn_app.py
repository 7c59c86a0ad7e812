"""gunicorn, configured in code: the master (gunicorn's arbiter, with the
master's own loops) and the event-loop worker (webhook.server.worker), which
reads the Launch, server settings included, from the application it is forked
with: gunicorn's options are only those gunicorn itself reads (the bind, the
number of workers, the timeouts its arbiter enforces, logging). TLS only
(1.2+, forward-secret AEAD ciphers), certificates reloaded from disk by each
worker without a restart, Prometheus multiprocess bookkeeping."""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from webhook.certificates.serving import ServingCertificates
from webhook.config import Config
from webhook.server import listen_drain


def _metrics_listener(host: str, s, certificates: ServingCertificates):
    from webhook import metrics
    from webhook.certificates.files import ReloadingContext
    from webhook.server.metrics_listener import MetricsListener
    tls = ReloadingContext(certificates.paths.cert, certificates.paths.key).get if s.metricsTLS else None
    try:
        return MetricsListener(host, s.metricsPort, metrics.render, tls).bind()
    except OSError as exc:           # one line (as logFormat says), exit 1
        logging.getLogger("workload_webhook.serve").error("server.metricsPort %s: cannot listen on %s: %s",
                                                           s.metricsPort, host, exc.strerror)
        raise SystemExit(1) from None


def _child_exit(server, worker) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess
        multiprocess.mark_process_dead(worker.pid)


@dataclass
class Launch:
    config: Config              # with the effective server settings (flags > env > file)
    certificates: ServingCertificates   # the files, and in mode secret the renewal loop
    kubeconfig: str | None = None
    registrar: object | None = None     # a Registrar to run in the master (serve --register)


class WebhookServer(BaseApplication):
    def __init__(self, launch: Launch):
        self.launch = launch
        self.metrics = None           # the master's listener on server.metricsPort
        self.snapshot = None          # the master's LIST, until the first workers are forked
        super().__init__()

    def load_config(self) -> None:
        from webhook.server import logs, series
        s = self.launch.config.server
        host = f"[{s.bindAddress}]" if ":" in s.bindAddress else s.bindAddress
        options = {
            "bind": [f"{host}:{s.port}"],
            "workers": s.workers,
            "worker_class": "webhook.server.worker.BoundedWorker",
            "timeout": 30,                              # a worker silent this long is killed and replaced
            "graceful_timeout": s.gracefulTimeoutSeconds,   # then the arbiter kills a stopping worker
            # gunicorn checks the files exist before it binds, and logs https://; the worker reads
            # the same paths from the Launch and reloads them (webhook/certificates/files.py).
            "certfile": self.launch.certificates.paths.cert,
            "keyfile": self.launch.certificates.paths.key,
            "child_exit": _child_exit,
            "loglevel": s.logLevel,
            "logconfig_dict": logs.gunicorn_logconfig(s.logLevel, s.logFormat),    # gunicorn's lines as ours
            "proc_name": "workload-webhook",
        }
        series.before_fork(self.launch.config, self.launch.certificates.paths)    # series at zero, expiry gauges
        if s.metricsPort and self.metrics is None:     # bound before any fork: a taken port fails the start
            self.metrics = _metrics_listener(host, s, self.launch.certificates)
        if self.metrics is not None:
            options["post_fork"] = lambda server, worker: self.metrics.close_in_child()
        if s.cluster != "disabled" or self.launch.certificates.sync is not None or self.launch.registrar is not None \
                or self.metrics is not None:
            options["when_ready"] = self._when_ready
        if "control_socket_disable" in self.cfg.settings:   # gunicorn >= 25.1: no runtime control socket
            options["control_socket_disable"] = True
        if os.path.isdir("/dev/shm"):
            options["worker_tmp_dir"] = "/dev/shm"
        for key, value in options.items():
            self.cfg.set(key, value)

    def _when_ready(self, server) -> None:
        """In the master, before the first workers fork: one LIST of PodGroups they all
        start from (webhook/cluster/snapshot.py), then the master's own loops."""
        from webhook.server import logs
        s = self.launch.config.server
        logs.setup(s.logLevel, s.logFormat)
        if self.metrics is not None:
            self.metrics.start()      # answers from start-up, before the LIST below and the workers
        if s.cluster != "disabled":
            from webhook.cluster.snapshot import listed_once
            self.snapshot = listed_once(s.cluster, self.launch.kubeconfig)
        if self.launch.certificates.sync is not None or self.launch.registrar is not None:
            self._start_master_loops()
        if (self.launch.config.bridge.dialects or self.launch.config.gangs.model) and s.cluster != "disabled":
            self._start_bridge()

    def _start_bridge(self) -> None:
        """The bridge's reconcile loop, in a process of its own (webhook/server/bridge_process.py:
        why not a thread here); every replica is a candidate for its Lease, only the holder
        writes, and a stopping master stops it (it gives the Lease up)."""
        from webhook.server.bridge_process import Supervisor
        s = self.launch.config.server
        bridge = Supervisor(s.cluster, self.launch.kubeconfig, self.launch.config.bridge, s.logLevel,
                            s.logFormat, self.launch.config.gangs).start()
        self.cfg.set("on_exit", lambda server: bridge.stop())

    def workers_forked(self) -> None:
        """In the master, once the first workers are forked: they hold the snapshot now,
        and workers forked later (a restart) list by themselves: the master keeps nothing."""
        self.snapshot = None

    def _start_master_loops(self) -> None:
        """The certificate sync and the registration live in the master: workers come and go."""
        import threading
        if self.launch.certificates.sync is not None:
            interval = self.launch.certificates.check_interval
            threading.Thread(target=self.launch.certificates.sync.run, args=(interval, threading.Event()),
                             name="certificate-sync", daemon=True).start()
        if self.launch.registrar is not None:
            threading.Thread(target=self.launch.registrar.run, args=(threading.Event(),), name="registration",
                             daemon=True).start()

    def run(self) -> None:
        try:
            _Master(self).run()
        except RuntimeError as exc:     # as gunicorn's BaseApplication.run: one line, exit 1
            print(f"\nError: {exc}\n", file=sys.stderr)
            sys.stderr.flush()
            sys.exit(1)

    def load(self):
        """Runs in each worker after the fork: threads (watch caches) start here."""
        from webhook.cluster.cache import connect
        from webhook.view import ClusterUnavailable, DisabledView
        from webhook.server import logs
        from webhook.server.app import State, build_admission
        s = self.launch.config.server
        logs.setup(s.logLevel, s.logFormat)
        try:
            from webhook.cluster.snapshot import restore
            view = connect(s.cluster, self.launch.kubeconfig, s.lookupTimeoutSeconds,
                           restore(self.snapshot)) or DisabledView()
        except ClusterUnavailable:
            raise SystemExit(2)
        self.snapshot = None          # this worker's inherited copy of the master's LIST: freed
        certificates = self.launch.certificates
        # The master's registrar says (through memory shared at the fork) why this Pod is not ready.
        unready = getattr(self.launch.registrar, "unready_reason", None) or (lambda: None)
        return build_admission(State(self.launch.config, view, certs_loaded=certificates.loaded,
                                     sync_stalled=certificates.stalled, unregistrable=unready))


class _Master(Arbiter):
    """gunicorn's arbiter, telling the application once it has forked the workers it lacked."""

    def spawn_workers(self) -> None:
        super().spawn_workers()         # a forked worker never returns from it
        self.app.workers_forked()

    def stop(self, graceful: bool = True) -> None:
        """Before the listeners close: new SYNs are dropped (webhook.server.listen_drain), so
        the workers' last accepts leave nothing in the queue for a close to reset. Not when
        another master serves the same sockets (gunicorn's own condition for unlinking them)."""
        if self.reexec_pid == self.master_pid == 0 and not self.cfg.reuse_port:
            if all([listen_drain.refuse_new_connections(listener.sock) for listener in self.LISTENERS]):
                logging.getLogger("workload_webhook.server").info(
                    "stopping: the listeners refuse new connections; the workers answer what is queued")
        super().stop(graceful)
