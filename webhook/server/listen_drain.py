"""Closing a listener without resetting what the kernel has already accepted.

The last process to close a listening socket resets every connection waiting in its
queue, and a client whose handshake completed there has seen `connect()` succeed: it
meets a reset, not a refusal. Accepting until EAGAIN and then closing leaves a window
(however short) in which one more handshake completes. So a stopping server first
makes the socket drop new SYNs (a classic BPF socket filter: a segment with SYN and
without ACK is dropped; every other segment passes, so a handshake already half done
completes into the queue), accepts what is queued, and closes. A client whose SYN was
dropped retries it (about a second later, TCP's initial retransmission timeout) and is
refused by then: refused, never reset after connecting.

The filter belongs to the socket, which every process holding a copy shares, so the
master attaches it when it stops for good, as gunicorn decides whether to unlink a
socket: not after a re-exec (USR2), whose new master serves the same sockets.
"""
from __future__ import annotations

import ctypes
import logging
import socket
import struct

log = logging.getLogger("workload_webhook.server")

SO_ATTACH_FILTER = 26        # Linux, <asm-generic/socket.h>
# Classic BPF opcodes (<linux/filter.h>).
_LD_B_ABS, _AND_K, _JEQ_K, _RET_K = 0x30, 0x54, 0x15, 0x06
_SYN, _ACK = 0x02, 0x10
#: Offset of the TCP flags byte: a TCP socket's filter sees the segment from its TCP header.
_FLAGS_OFFSET = 13
_PROGRAM = (
    (_LD_B_ABS, 0, 0, _FLAGS_OFFSET),
    (_AND_K, 0, 0, _SYN | _ACK),
    (_JEQ_K, 0, 1, _SYN),            # SYN without ACK: a new connection
    (_RET_K, 0, 0, 0),               # drop it
    (_RET_K, 0, 0, 0xFFFFFFFF),      # everything else passes whole
)


def refuse_new_connections(sock: socket.socket) -> bool:
    """Make `sock` drop new SYNs from now on; False where the kernel does not take the
    filter (not Linux, not TCP), and then closing is what it was before."""
    code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in _PROGRAM))
    prog = struct.pack("HL", len(_PROGRAM), ctypes.addressof(code))
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, prog)
    except OSError as exc:
        log.debug("listener: no SYN filter (%s); closing it may reset a connection queued meanwhile", exc)
        return False
    return True
