"""The gunicorn worker: one event loop (uvloop, on libuv) per worker process;
a connection costs a protocol object, not a thread or a greenlet.

gunicorn stays the process manager (the master's one LIST before the fork,
its certificate and registration loops, workers replaced when they die); what
a worker does with its sockets is here and in webhook/server/connection.py.
The Python HTTP stack was ~80 % of a Pod join's CPU under the gevent worker
(gunicorn's parser and WSGI environ, gevent's loop and TLS wrapper); here the
parsing is llhttp (httptools) and the TLS and socket work libuv's and
OpenSSL's, so a Pod join costs about 0.15 ms of CPU instead of 0.32 ms
(bench/README.md, the service benchmark's two workers side by side).

Every phase of a connection is bounded, so stalled clients (a half
ClientHello, a connection that finished TLS and sends nothing, a head sent
byte by byte) cost a little memory each and hold nothing:

- handshake: `server.handshakeTimeoutSeconds`
- head and idle time, body, unread answers: webhook/server/connection.py
- at most `server.maxConnections` connections per worker; past that the
  worker stops accepting (the kernel's listen queue holds the rest, the other
  worker takes its share) until one closes.

The request bodies a worker buffers share one budget, `server.bodyBudgetBytes`
(webhook/server/budget.py): past it, connections stop reading their bodies
until answers give bytes back.

On SIGTERM a worker waits until the master has closed its copy of the listeners
(the master first makes them drop new SYNs: webhook/server/listen_drain.py), then
accepts what already waits in the listen queue, so a connection the kernel
accepted is answered, not reset; then it stops accepting. Its connections
answer what they read, the last answer with `Connection: close`, and close once
idle for a second (webhook/server/connection.py); what is in flight finishes
within gunicorn's graceful timeout.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import ssl
import sys
from concurrent.futures import ThreadPoolExecutor

import uvloop
from gunicorn.workers.base import Worker

from webhook import metrics
from webhook.server.budget import BodyBudget
from webhook.server.connection import Connection

log = logging.getLogger("workload_webhook.server")

#: Threads per worker for judgments that wait for the API server (bounded by its lookup timeout).
LOOKUP_THREADS = 8
#: Seconds a stopping worker waits for the master to close its listeners first.
MASTER_CLOSE_WAIT = 2.0
#: Seconds a connection the server closed waits for the client's TLS close_notify (dropping
#: what it still sends) before it is dropped; uvloop's default, 30 s, kept closed connections
#: counted against maxConnections, and a stopping worker alive, for that long.
TLS_CLOSE_WAIT = 3.0
CONNECTION_ERRORS = (OSError, ssl.SSLError, asyncio.TimeoutError, ValueError)


class BoundedWorker(Worker):
    """A gunicorn worker serving the admission app (webhook.server.admit) over
    TLS with certificates reloaded from disk, on an event loop."""

    def init_process(self) -> None:
        from webhook.certificates import files
        launch = self.app.launch                     # webhook.server.gunicorn_app.Launch, as the master had it
        self.settings = launch.config.server
        self.tls = files.ReloadingContext(launch.certificates.paths.cert, launch.certificates.paths.key)
        super().init_process()

    def load_wsgi(self) -> None:
        """gunicorn's hook for loading the app: here the Admission (webhook.server.admit)."""
        self.admission = self.app.load()

    def run(self) -> None:
        loop = uvloop.new_event_loop()
        asyncio.set_event_loop(loop)
        loop.set_exception_handler(_connection_errors_quietly)
        server = EventLoopServer(self, loop)
        try:
            loop.run_until_complete(server.run())
        finally:
            server.pool.shutdown(wait=False, cancel_futures=True)
            loop.close()
        # Every connection is answered or closed. Exit here rather than through the
        # interpreter's shutdown: the watch caches' daemon threads may sit in a socket
        # read, and finalizing around them aborted the process (SIGABRT).
        self.log.info("Worker exiting (pid: %s)", self.pid)
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


class EventLoopServer:
    """One worker's server, on its event loop: what its connections share
    (webhook/server/connection.py Shared: the admission, the settings, the body
    budget, the lookup pool), accepting them up to `server.maxConnections`, and
    the stop."""

    def __init__(self, worker: BoundedWorker, loop: asyncio.AbstractEventLoop):
        self.worker, self.loop = worker, loop
        settings = self.settings = worker.settings
        self.admission = worker.admission
        self.idle = settings.idleTimeoutSeconds
        self.body_timeout = settings.bodyTimeoutSeconds
        self.max_body = settings.maxBodyBytes
        self.budget = BodyBudget(settings.bodyBudgetBytes)
        self.port = worker.sockets[0].getsockname()[1]
        self.pool = ThreadPoolExecutor(max_workers=LOOKUP_THREADS, thread_name_prefix="lookup")
        self.connections: set[Connection] = set()
        self.handshaking = 0
        self.listeners = [s.sock for s in worker.sockets]
        self.accepting = False
        self.stopping = False
        self.graceful = True
        self.max_connections = settings.maxConnections
        self.per_wakeup = 1 if settings.workers > 1 else 32   # share the listen queue with the other workers
        self._wake = asyncio.Event()

    # -- the life of the worker ---------------------------------------------

    async def run(self) -> None:
        for sig in (signal.SIGTERM,):
            self.loop.add_signal_handler(sig, self._stop, True)
        for sig in (signal.SIGINT, signal.SIGQUIT):
            self.loop.add_signal_handler(sig, self._stop, False)
        for sock in self.listeners:
            sock.setblocking(False)
        self._accept(True)
        parent = self.worker.ppid
        while self.worker.alive and not self.stopping:
            self.worker.notify()
            if os.getppid() != parent:
                log.info("the master is gone; the worker stops")
                break
            try:
                await asyncio.wait_for(self._wake.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
        await self._shutdown()

    def _stop(self, graceful: bool) -> None:
        self.worker.alive = False
        self.stopping, self.graceful = True, graceful
        self._wake.set()

    async def _shutdown(self) -> None:
        self.stopping = True
        if self.graceful:
            await self._master_let_go()
            for sock in self.listeners:
                self._take_waiting(sock)
        self._accept(False)
        for sock in self.listeners:
            sock.close()
        for conn in list(self.connections):
            conn.shutdown()
        deadline = self.loop.time() + (self.settings.gracefulTimeoutSeconds if self.graceful else 0)
        while (self.connections or self.handshaking) and self.loop.time() < deadline:
            self.worker.notify()
            await asyncio.sleep(0.1)
        for conn in list(self.connections):
            conn.transport.abort()

    async def _master_let_go(self) -> None:
        """Keep accepting until the master has closed its copy of the listeners.
        The last process to close a listener resets what the kernel queued on it;
        a SIGTERM sent to the whole process group (a terminal's, a test's) reaches
        the workers before the master has closed its own, and connections queued
        in between would be reset. gunicorn's master closes its listeners before it
        signals the workers, so this returns at once when the master stopped them."""
        ours = {os.fstat(sock.fileno()).st_ino for sock in self.listeners}
        deadline = self.loop.time() + MASTER_CLOSE_WAIT
        while self.loop.time() < deadline and os.getppid() == self.worker.ppid:
            try:
                held = {os.stat(f"/proc/{self.worker.ppid}/fd/{fd}").st_ino
                        for fd in os.listdir(f"/proc/{self.worker.ppid}/fd")}
            except FileNotFoundError:       # an fd closed while we looked: look again
                continue
            except OSError:                 # no /proc to read: give the master the whole wait
                await asyncio.sleep(max(0.0, deadline - self.loop.time()))
                return
            if not ours & held:
                return
            await asyncio.sleep(0.005)

    # -- accepting ------------------------------------------------------------

    @property
    def count(self) -> int:
        return len(self.connections) + self.handshaking

    def _accept(self, on: bool) -> None:
        if on == self.accepting or (on and self.stopping):
            return
        self.accepting = on
        for sock in self.listeners:
            if on:
                self.loop.add_reader(sock.fileno(), self._readable, sock)
            else:
                self.loop.remove_reader(sock.fileno())

    def _readable(self, sock) -> None:
        for _ in range(self.per_wakeup):
            if self.count >= self.max_connections:
                self._accept(False)
                return
            if not self._accept_one(sock):
                return

    def _take_waiting(self, sock) -> None:
        """Every connection already in the listen queue, before the listener closes
        (closing it resets what waits there)."""
        while self.count < self.max_connections and self._accept_one(sock):
            pass

    def _accept_one(self, sock) -> bool:
        try:
            client, _ = sock.accept()
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as exc:
            return exc.errno in (errno.ECONNABORTED, errno.EPROTO)   # that one went away; try the next
        client.setblocking(False)
        self.handshaking += 1
        self.loop.create_task(self._handshake(client))
        return True

    async def _handshake(self, client) -> None:
        try:
            await self.loop.connect_accepted_socket(lambda: Connection(self), client, ssl=self.worker.tls.get(),
                                                    ssl_handshake_timeout=self.settings.handshakeTimeoutSeconds,
                                                    ssl_shutdown_timeout=TLS_CLOSE_WAIT)
        except CONNECTION_ERRORS as exc:   # stalled past the timeout, reset, not TLS at all
            metrics.CONNECTIONS_DROPPED.labels("handshake").inc()
            log.debug("TLS handshake failed: %s", exc)
            client.close()
        finally:
            self.handshaking -= 1
            self._resume()

    # -- connections ----------------------------------------------------------

    def opened(self, conn: Connection) -> None:
        self.connections.add(conn)
        if self.stopping:
            conn.shutdown()              # answered with Connection: close, or closed once idle

    def closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self._resume()

    def _resume(self) -> None:
        if not self.accepting and not self.stopping and self.count < self.max_connections:
            self._accept(True)


def _connection_errors_quietly(loop, context) -> None:
    """A peer that resets or sends garbage is not the service's error: one debug line, no traceback."""
    exc = context.get("exception")
    if isinstance(exc, CONNECTION_ERRORS):
        log.debug("connection: %s (%s)", context.get("message"), exc)
    else:
        log.error("event loop: %s", context.get("message"), exc_info=exc)
