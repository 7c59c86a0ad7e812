"""The gunicorn worker: a connection costs a greenlet, not a thread.

gunicorn's gthread worker does the TLS handshake and reads the request head in
a pool thread on a blocking socket. A handful of connections that stall there
(a half ClientHello, a connection that finished TLS and sends nothing, a head
sent byte by byte, or simply a connection Go's HTTP client in kube-apiserver
dialled under load and parked idle in its pool) hold all 2x4 threads, and
admission stops for everyone. Here every connection waits in its own greenlet
(gevent), as a goroutine would in Go's net/http, and each phase is bounded:

- handshake: `server.handshakeTimeoutSeconds`
- the head of the next request, kept-alive idle time included:
  `server.idleTimeoutSeconds`
- any single read or write after that (the body, the answer):
  `server.idleTimeoutSeconds` + 5 s

On SIGTERM a worker first accepts what already waits in the listen queue, so a
connection the kernel accepted is answered, not reset; then it stops accepting
and finishes what is in flight within gunicorn's graceful timeout.

The Flask app runs unchanged; CPU work is one request at a time per worker, as
it was under the GIL with threads. gevent's monkey patching must run before
anything imports ssl, gunicorn included (the `serve` command does it first),
so that the master's certificate sync, the workers' watch caches and their
API lookups all cooperate with the event loop instead of blocking it.
"""
from __future__ import annotations

import errno
import socket
import time
from dataclasses import dataclass
from functools import partial

import gevent
from gevent.pool import Pool
from gevent.server import StreamServer
from gunicorn import util
from gunicorn.workers.base_async import AsyncWorker
from gunicorn.workers.ggevent import GeventWorker

IO_SLACK_SECONDS = 5.0


@dataclass
class Limits:
    handshake: float = 5.0
    idle: float = 30.0


# Set by the master before it forks the workers (gunicorn_app.WebhookServer).
LIMITS = Limits()


class BoundedWorker(GeventWorker):
    """gunicorn's gevent worker with our TLS context (certificates reloaded
    from disk) and bounded handshake, head and idle time."""

    def init_process(self) -> None:
        from webhook.certificates import files  # after monkey patching: the context is gevent's
        self.tls = files.ReloadingContext(self.cfg.certfile, self.cfg.keyfile)
        super().init_process()

    def timeout_ctx(self):
        # Covers waiting for, and reading, the head of each request on a connection.
        return gevent.Timeout(LIMITS.idle, False)

    def handle(self, listener, client, addr) -> None:
        from webhook import metrics
        client.settimeout(LIMITS.handshake)
        try:
            conn = self.tls.get().wrap_socket(client, server_side=True, do_handshake_on_connect=False)
            conn.do_handshake()
        except (OSError, ValueError) as exc:      # stalled past the timeout, reset, not TLS at all
            metrics.CONNECTIONS_DROPPED.labels("handshake").inc()
            self.log.debug("TLS handshake with %s failed: %s", addr, exc)
            util.close(client)
            return
        conn.settimeout(LIMITS.idle + IO_SLACK_SECONDS)
        try:
            AsyncWorker.handle(self, listener, conn, addr)
        finally:
            util.close(conn)

    def handle_request(self, listener_name, req, sock, addr):
        """One write per response: gunicorn sends the head and the body as two
        writes (two TLS records); they leave together here."""
        out = _OneWrite(sock)
        try:
            return super().handle_request(listener_name, req, out, addr)
        finally:
            out.flush()

    def run(self) -> None:
        servers = []
        for s in self.sockets:
            s.setblocking(1)
            server = StreamServer(s, handle=partial(self.handle, _Listener(s.getsockname())),
                                  spawn=Pool(self.worker_connections))
            if self.cfg.workers > 1:
                server.max_accept = 1     # share the listen queue with the other workers
            server.start()
            servers.append(server)

        while self.alive:
            self.notify()
            gevent.sleep(1.0)

        for listener, server in zip(self.sockets, servers):
            self._accept_waiting(listener, _Listener(listener.getsockname()), server)
            server.close()
        deadline = time.monotonic() + self.cfg.graceful_timeout
        while time.monotonic() < deadline and any(sv.pool.free_count() != sv.pool.size for sv in servers):
            self.notify()
            gevent.sleep(0.1)
        for server in servers:
            server.stop(timeout=1)

    def _accept_waiting(self, listener: socket.socket, name: "_Listener", server: StreamServer) -> None:
        """Take every connection already in the listen queue before closing it:
        closing a listener resets what waits there."""
        listener.setblocking(False)
        while server.pool.free_count() > 0:
            try:
                client, addr = listener.accept()
            except (BlockingIOError, TimeoutError):
                return
            except OSError as exc:
                if exc.errno in (errno.ECONNABORTED, errno.EINTR):
                    continue
                return
            server.pool.spawn(self.handle, name, client, addr)


class _OneWrite:
    """The connection as gunicorn's response writer sees it: `sendall` writes
    are kept until the response is complete, then sent at once. Everything else
    is the socket's (`send` too: gunicorn sends `100 Continue` with it, which
    must leave before the body is read)."""

    def __init__(self, sock):
        self._sock = sock
        self._parts: list[bytes] = []

    def sendall(self, data) -> None:
        self._parts.append(bytes(data))

    def flush(self) -> None:
        if self._parts:
            data, self._parts = b"".join(self._parts), []
            self._sock.sendall(data)

    def __getattr__(self, name):
        return getattr(self._sock, name)


class _Listener:
    """What a connection's handler needs of its listener (its address), still
    there after the listener is closed at shutdown."""

    def __init__(self, address):
        self.address = address

    def getsockname(self):
        return self.address

