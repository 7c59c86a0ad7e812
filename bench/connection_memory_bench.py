"""What a connection costs a worker, and what a worker holds when every body
waits for the body budget (server.bodyBudgetBytes): one worker of
`workload-webhook serve`, N TLS connections of each kind, the worker's RSS
(from /proc, tests/e2e/scale.py) before and after, per connection.

- idle:     TLS handshake done, nothing sent
- head:     a request head of 60 KiB sent but not ended (just under the 64 KiB head limit)
- waiting:  a head declaring a 7 MiB body and the body sent as fast as the server reads:
            the budget's bodies are read, every other connection waits for the budget

    python bench/connection_memory_bench.py [--connections 200] [--budget-mib 16]

Everything listens on 127.0.0.1 and stops by itself.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.memory import memory_kib  # noqa: E402
from tests.server.harness import Server  # noqa: E402

BODY = 7 * 1024 * 1024
HEAD = (b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % BODY)
PIECE = b" " * 65536


async def _open(server: Server, count: int, kind: str, ctx: ssl.SSLContext, stop: asyncio.Event):
    async def one():
        _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=ctx, server_hostname="localhost")
        if kind == "head":
            writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nX-Pad: " + b"a" * (60 * 1024))
        elif kind == "waiting":
            writer.write(HEAD)
            left = BODY - 1
            while left and not stop.is_set():
                piece = PIECE[:min(left, len(PIECE))]
                writer.write(piece)
                try:
                    await asyncio.wait_for(writer.drain(), 0.5)
                except asyncio.TimeoutError:
                    pass                    # the server does not read this one (yet)
                left -= len(piece)
        await stop.wait()
        writer.transport.abort()
    return [asyncio.ensure_future(one()) for _ in range(count)]


def measure(kind: str, count: int, budget: int) -> dict:
    with Server(tempfile.mkdtemp(), workers=1, extra=["--cluster", "disabled", "--body-budget-bytes", str(budget),
                                                     "--idle-timeout", "120", "--body-timeout", "120"]) as server:
        worker = server.workers()[0]
        before = memory_kib(worker)["rss"]
        loop = asyncio.new_event_loop()
        stop = asyncio.Event()

        async def run():
            tasks = await _open(server, count, kind, server.ssl_context(), stop)
            await asyncio.sleep(6 if kind == "waiting" else 3)
            after = memory_kib(worker)["rss"]
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            return after
        after = loop.run_until_complete(run())
        loop.close()
    return {"kind": kind, "connections": count, "before_mib": before / 1024, "after_mib": after / 1024,
            "per_connection_kib": (after - before - (budget / 1024 if kind == "waiting" else 0)) / count}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--budget-mib", type=int, default=16)
    args = ap.parse_args()
    budget = args.budget_mib * 1024 * 1024
    print(f"{'kind':<8} {'conns':>6} {'worker RSS before':>18} {'after':>8} {'per connection':>15}")
    for kind in ("idle", "head", "waiting"):
        r = measure(kind, args.connections, budget)
        note = "   (beyond the budget's bodies)" if kind == "waiting" else ""
        print(f"{r['kind']:<8} {r['connections']:>6} {r['before_mib']:>15.1f} MiB {r['after_mib']:>5.1f} MiB "
              f"{r['per_connection_kib']:>11.0f} KiB{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
