"""The SYN filter a stopping master puts on its listeners (webhook/server/listen_drain.py),
on real loopback sockets: a handshake that completed before it is accepted and carries
data; a new one is not established (its SYN is dropped); once the listener is closed, a
new connection is refused. Without the filter, a connection queued before the close is
reset: the case the filter exists for."""
from __future__ import annotations

import os
import socket

import pytest

from webhook.server import listen_drain


def _listener() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock, sock.getsockname()[1]


def test_a_connection_queued_before_the_filter_is_accepted_and_a_new_one_is_never_established():
    listener, port = _listener()
    before = socket.create_connection(("127.0.0.1", port), timeout=2)
    assert listen_drain.refuse_new_connections(listener)
    late = socket.socket()
    late.settimeout(0.4)
    with pytest.raises(socket.timeout):              # the SYN is dropped: no handshake, no queue entry
        late.connect(("127.0.0.1", port))
    late.close()
    accepted, _ = listener.accept()                 # the earlier one waits in the queue and passes the filter
    before.sendall(b"ping")
    assert accepted.recv(4) == b"ping"
    accepted.sendall(b"pong")
    assert before.recv(4) == b"pong"
    listener.setblocking(False)
    with pytest.raises(BlockingIOError):            # nothing else reached the queue
        listener.accept()
    listener.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
    accepted.close()
    before.close()


def test_without_the_filter_closing_the_listener_resets_what_waits_in_its_queue():
    listener, port = _listener()
    queued = socket.create_connection(("127.0.0.1", port), timeout=2)   # connect() succeeded
    listener.close()
    with pytest.raises(ConnectionResetError):
        queued.sendall(b"x" * 10)
        queued.recv(1)
    queued.close()


def test_over_ipv6_the_filter_reads_the_same_tcp_flags():
    listener = socket.socket(socket.AF_INET6)
    try:
        listener.bind(("::1", 0))
    except OSError as exc:          # the real component missing: a failure in CI, as every other
        (pytest.fail if os.environ.get("CI") == "true" else pytest.skip)(f"no ::1 loopback here: {exc}")
    listener.listen(4)
    port = listener.getsockname()[1]
    before = socket.create_connection(("::1", port), timeout=2)
    assert listen_drain.refuse_new_connections(listener)
    late = socket.socket(socket.AF_INET6)
    late.settimeout(0.4)
    with pytest.raises(socket.timeout):
        late.connect(("::1", port))
    late.close()
    accepted, _ = listener.accept()
    before.sendall(b"six")
    assert accepted.recv(3) == b"six"
    for s in (accepted, before, listener):
        s.close()
