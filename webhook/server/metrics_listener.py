"""/metrics on a port of its own (`server.metricsPort`), served by a thread of the
gunicorn master: scraping needs no access to the admission port, so a NetworkPolicy
can admit the scraper to this port and the API server alone to the other. Plain
HTTP, or TLS with the serving certificate (`server.metricsTLS`), reloaded from disk
as the workers reload theirs. The master answers from start-up, before any worker
serves, and sums every worker's counts (prometheus multiprocess files).

Bounded, since the master must never be held up by a client: at most
`max_connections` at a time (others are closed at once), each closed after
`deadline` seconds whatever it does (TLS handshake, a head sent byte by byte),
one request per connection, GET /metrics only; anything else is a one-line JSON
4xx."""
from __future__ import annotations

import json
import logging
import socket
import socketserver
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

log = logging.getLogger("workload_webhook.metrics")

MAX_CONNECTIONS = 16
DEADLINE_SECONDS = 10.0
MAX_DRAINED_BODY = 65536


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"        # one request per connection: nothing idles on a kept-alive one

    def version_string(self) -> str:
        return "workload-webhook"

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            self._one_line(404, "not found: only GET /metrics is served on this port")
            return
        try:
            data, ctype = self.server.render()
        except Exception:                # a damaged multiprocess file: say so, keep serving
            log.exception("rendering metrics failed")
            self._one_line(500, "metrics could not be rendered; see the webhook's log")
            return
        self._send(200, data, ctype)

    def _refuse_method(self) -> None:
        # Read a small body first: closing with unread bytes resets the connection before the client reads the answer.
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if 0 < length <= MAX_DRAINED_BODY:
            self.rfile.read(length)
        self._one_line(405, f"method {self.command[:32]} not allowed: only GET /metrics is served on this port",
                       {"Allow": "GET"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _refuse_method

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a bad request line, too many headers) as one JSON line, not HTML."""
        self.close_connection = True
        self.request_version = self.protocol_version     # an unreadable request line still gets a status line
        self._one_line(code, (message or self.responses.get(code, ("error",))[0]).splitlines()[0][:200])

    def _one_line(self, status: int, reason: str, headers: dict | None = None) -> None:
        self._send(status, json.dumps({"error": reason}).encode() + b"\n", "application/json", headers)

    def _send(self, status: int, body: bytes, ctype: str, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:    # noqa: A002 (http.server's name)
        log.debug("metrics: %s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    allow_reuse_address = True

    def __init__(self, address, render: Callable[[], tuple[bytes, str]], tls: Callable[[], ssl.SSLContext] | None,
                 max_connections: int, deadline: float):
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.address_family = family
        self.render, self.tls, self.deadline = render, tls, deadline
        self.slots = threading.BoundedSemaphore(max_connections)
        self.held, self._held_lock = 0, threading.Lock()      # connections being served
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)      # HTTPServer's would resolve the host's FQDN: DNS at start-up
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request, client_address) -> None:
        if not self.slots.acquire(blocking=False):      # full: close at once, never queue behind slow clients
            self.shutdown_request(request)
            return
        self._count(1)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._count(-1)
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._count(-1)
            self.slots.release()

    def _count(self, change: int) -> None:
        with self._held_lock:
            self.held += change

    def finish_request(self, request, client_address) -> None:
        # One deadline for the whole connection: a timer shuts the socket, which ends any read or write.
        timer = threading.Timer(self.deadline, _shut, (request,))
        timer.daemon = True
        timer.start()
        conn = request
        try:
            request.settimeout(self.deadline)
            if self.tls is not None:
                conn = self.tls().wrap_socket(request, server_side=True)
            self.RequestHandlerClass(conn, client_address, self)
        except (OSError, ssl.SSLError) as exc:     # a failed handshake, a reset, the deadline
            log.debug("metrics connection from %s: %s", client_address[0], exc)
        finally:
            timer.cancel()
            if conn is not request:
                conn.close()

    def handle_error(self, request, client_address) -> None:
        log.warning("metrics connection from %s failed", client_address[0], exc_info=True)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class MetricsListener:
    """Bind with `bind()` (before gunicorn forks: a taken port fails the start at once),
    serve with `start()` in the master, `close_in_child()` after a fork."""

    def __init__(self, host: str, port: int, render: Callable[[], tuple[bytes, str]],
                 tls: Callable[[], ssl.SSLContext] | None = None, max_connections: int = MAX_CONNECTIONS,
                 deadline: float = DEADLINE_SECONDS):
        self.host, self.port, self.render, self.tls = host, port, render, tls
        self.max_connections, self.deadline = max_connections, deadline
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def bind(self) -> "MetricsListener":
        self._server = _Server((self.host.strip("[]"), self.port), self.render, self.tls, self.max_connections,
                               self.deadline)
        self.port = self._server.server_address[1]
        return self

    def start(self) -> None:
        if self._thread is not None:
            return
        if self._server is None:
            self.bind()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.5},
                                        name="metrics-listener", daemon=True)
        self._thread.start()

    @property
    def serving(self) -> int:
        """The connections it holds now, at most max_connections."""
        return self._server.held if self._server is not None else 0

    def close_in_child(self) -> None:
        """A forked worker inherits the listening socket: close its copy, so only the master holds it."""
        if self._server is not None:
            self._server.socket.close()

    def stop(self) -> None:
        if self._server is not None:
            if self._thread is not None:
                self._server.shutdown()
            self._server.server_close()
