"""gunicorn, configured in code: TLS only (1.2+, forward-secret AEAD ciphers),
the event-loop worker (webhook.server.worker) with HTTP keep-alive,
certificates reloaded from disk by each worker without a restart, Prometheus
multiprocess bookkeeping."""
from __future__ import annotations

import os
from dataclasses import dataclass

from gunicorn.app.base import BaseApplication

from webhook.certificates.serving import Serving
from webhook.config import Config

def _metrics_listener(host: str, s, serving: Serving):
    from webhook import metrics
    from webhook.certificates.files import ReloadingContext
    from webhook.server.metrics_listener import MetricsListener
    tls = ReloadingContext(serving.paths.cert, serving.paths.key).get if s.metricsTLS else None
    try:
        return MetricsListener(host, s.metricsPort, metrics.render, tls).bind()
    except OSError as exc:           # gunicorn prints it as one line and exits 1
        raise RuntimeError(f"server.metricsPort {s.metricsPort}: cannot listen on {host}: {exc.strerror}") from None


def _child_exit(server, worker) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess
        multiprocess.mark_process_dead(worker.pid)


@dataclass
class Launch:
    config: Config              # with the effective server settings (flags > env > file)
    serving: Serving            # the certificates, and in mode secret the renewal loop
    kubeconfig: str | None = None
    registrar: object | None = None     # a Registrar to run in the master (serve --register)


class WebhookServer(BaseApplication):
    def __init__(self, launch: Launch):
        self.launch = launch
        self.metrics = None           # the master's listener on server.metricsPort
        super().__init__()

    def load_config(self) -> None:
        from webhook.server import worker
        s = self.launch.config.server
        worker.LIMITS = worker.Limits(handshake=s.handshakeTimeoutSeconds, idle=s.idleTimeoutSeconds,
                                      body_timeout=s.bodyTimeoutSeconds, body_budget=s.bodyBudgetBytes)
        host = f"[{s.bindAddress}]" if ":" in s.bindAddress else s.bindAddress
        options = {
            "bind": [f"{host}:{s.port}"],
            "workers": s.workers,
            "worker_class": "webhook.server.worker.BoundedWorker",
            "worker_connections": s.maxConnections,
            "keepalive": max(1, int(s.idleTimeoutSeconds)),
            "timeout": 30,
            "graceful_timeout": s.gracefulTimeoutSeconds,
            # The worker wraps each connection itself (certificates reloaded from disk);
            # these make gunicorn treat the server as https.
            "certfile": self.launch.serving.paths.cert,
            "keyfile": self.launch.serving.paths.key,
            "child_exit": _child_exit,
            "accesslog": None,
            "errorlog": "-",
            "loglevel": s.logLevel,
            "proc_name": "workload-webhook",
            "limit_request_line": 8190,
            "limit_request_fields": 100,
        }
        if s.metricsPort and self.metrics is None:     # bound before any fork: a taken port fails the start
            self.metrics = _metrics_listener(host, s, self.launch.serving)
        if self.metrics is not None:
            options["post_fork"] = lambda server, worker: self.metrics.close_in_child()
        if s.cluster != "disabled" or self.launch.serving.sync is not None or self.launch.registrar is not None \
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
        import threading
        from webhook.server import logs
        s = self.launch.config.server
        logs.setup(s.logLevel, s.logFormat)
        if self.metrics is not None:
            self.metrics.start()      # answers from start-up, before the LIST below and the workers
        self.snapshot = None
        if s.cluster != "disabled":
            from webhook.cluster.snapshot import listed_once
            self.snapshot = listed_once(s.cluster, self.launch.kubeconfig)
            if self.snapshot is not None:
                threading.Thread(target=self._drop_snapshot, args=(server,), name="snapshot", daemon=True).start()
        if self.launch.serving.sync is not None or self.launch.registrar is not None:
            self._start_master_loops()

    def _drop_snapshot(self, server) -> None:
        """Workers forked later (a restart) list by themselves: the master keeps nothing."""
        import time
        deadline = time.monotonic() + 120
        while len(server.WORKERS) < server.num_workers and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)               # the last fork has returned in the master
        self.snapshot = None

    def _start_master_loops(self) -> None:
        """The certificate sync and the registration live in the master: workers come and go."""
        import threading
        if self.launch.serving.sync is not None:
            interval = self.launch.serving.check_interval
            threading.Thread(target=self.launch.serving.sync.run, args=(interval, threading.Event()),
                             name="certificate-sync", daemon=True).start()
        if self.launch.registrar is not None:
            threading.Thread(target=self.launch.registrar.run, args=(threading.Event(),), name="registration",
                             daemon=True).start()

    def load(self):
        """Runs in each worker after the fork: threads (watch caches) start here."""
        from webhook.cluster.cache import connect
        from webhook.cluster.view import ClusterUnavailable, DisabledView
        from webhook.server import logs
        from webhook.server.app import State, create_app
        s = self.launch.config.server
        logs.setup(s.logLevel, s.logFormat)
        try:
            from webhook.cluster.snapshot import restore
            view = connect(s.cluster, self.launch.kubeconfig, s.lookupTimeoutSeconds,
                           restore(getattr(self, "snapshot", None))) or DisabledView()
        except ClusterUnavailable:
            raise SystemExit(2)
        self.snapshot = None          # this worker's inherited copy of the master's LIST: freed
        serving = self.launch.serving
        # The master's registrar says (through memory shared at the fork) why this Pod is not ready.
        unready = getattr(self.launch.registrar, "unready_reason", None) or (lambda: None)
        return create_app(State(self.launch.config, view, certs_loaded=serving.loaded, sync_stalled=serving.stalled,
                                unregistrable=unready))
