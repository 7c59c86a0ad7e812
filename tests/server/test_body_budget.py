"""The memory bound of the real server: 200 connections that each send most of
a 7 MiB body (the default maxBodyBytes) and then trickle, against
`workload-webhook serve` with the chart's settings. The worker's body budget
(server.bodyBudgetBytes) stops reading past it, so the process family stays
within the chart's memory limit, and admission calls made meanwhile are
answered. Bounded: the load stops by itself after SECONDS, or as soon as the
family's RSS passes the limit (what the server did before the budget)."""
from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import threading
import time

import yaml

from tests.memory import serve_memory
from tests.server.harness import REPO, Server, admission_request
from tests.unit.helpers import podgroup
from webhook.config import ServerSettings

CONNECTIONS = 200
BODY = 7 * 1024 * 1024                  # server.maxBodyBytes' default
SECONDS = 5.0
BODY_TIMEOUT = 2                        # short, so that the budget changes hands during the test
PIECE = b" " * 65536
SEND_BUFFER = 256 * 1024


def chart_memory_limit_mib() -> float:
    with open(os.path.join(REPO, "charts", "workload-webhook", "values.yaml")) as f:
        limit = yaml.safe_load(f)["resources"]["limits"]["memory"]
    assert limit.endswith("Mi"), limit
    return float(limit[:-2])


class Trickles:
    """CONNECTIONS TLS connections in one event loop (a thread): each sends the head
    of a BODY-byte request and all of it but the last byte as fast as the server
    reads, then waits; what each one got back is kept."""

    def __init__(self, server: Server):
        self.server, self.sent, self.outcomes = server, 0, []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._all(),), daemon=True)
        self.ctx = server.ssl_context()
        self._stop = None

    async def _all(self) -> None:
        self._stop = asyncio.Event()
        await asyncio.gather(*(self._one() for _ in range(CONNECTIONS)))

    async def _one(self) -> None:
        writer = None
        try:
            # A small send buffer: the kernel's autotuned one (up to 4 MiB) let the connections the
            # server is not reading soak up this one client loop's writes, so under a slow machine
            # the ones holding the budget did not get their body out before the body deadline.
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.server.port))
            reader, writer = await asyncio.open_connection(sock=sock, ssl=self.ctx, server_hostname="localhost")
            writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % BODY)
            left = BODY - 1
            try:
                while left and not self._stop.is_set():
                    piece = PIECE[:min(left, len(PIECE))]
                    writer.write(piece)
                    await self._until_stopped(writer.drain())
                    left -= len(piece)
                    self.sent += len(piece)
            except (OSError, ssl.SSLError):
                pass    # answered (408) and closed while still sending, on a slow machine: read what it said
            answer = await self._until_stopped(reader.read(200))
            self.outcomes.append(answer.split(b"\r\n", 1)[0].decode() if answer else "closed")
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError) as exc:
            self.outcomes.append(type(exc).__name__)
        except asyncio.TimeoutError:
            self.outcomes.append("waiting")
        finally:
            if writer is not None:
                writer.transport.abort()

    async def _until_stopped(self, awaitable):
        task = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self._stop.wait())
        done, _ = await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        if task not in done:
            task.cancel()
            stop.cancel()
            raise asyncio.TimeoutError
        stop.cancel()
        return task.result()

    def start(self) -> "Trickles":
        self.thread.start()
        return self

    def stop(self) -> None:
        while self._stop is None:
            time.sleep(0.01)
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(20)


def _refused(server: Server) -> dict[str, float]:
    _, _, body = server.get("/metrics")
    out = {}
    for line in body.decode().splitlines():
        if line.startswith("workload_webhook_http_refused_total{"):
            out[line.split('reason="', 1)[1].split('"', 1)[0]] = float(line.rsplit(" ", 1)[1])
    return out


def test_200_trickled_7_mib_bodies_stay_within_the_charts_memory_limit_and_admission_is_answered(tmp_path):
    limit = chart_memory_limit_mib()
    with Server(str(tmp_path), extra=["--cluster", "disabled", "--body-timeout", str(BODY_TIMEOUT)]) as server:
        at_start = _refused(server)
        idle = serve_memory(server.proc.pid)["rss_mib"]
        load = Trickles(server).start()
        peak, calls, slowest = idle, [], 0.0
        deadline = time.monotonic() + SECONDS
        try:
            while time.monotonic() < deadline and peak <= limit:
                peak = max(peak, serve_memory(server.proc.pid)["rss_mib"])
                started = time.monotonic()
                try:
                    status, body = server.review("/validate", admission_request(podgroup(), uid=f"c{len(calls)}"))
                    calls.append(status if body["response"]["uid"] == f"c{len(calls)}" else "wrong answer")
                except (OSError, ssl.SSLError, ValueError) as exc:
                    calls.append(repr(exc))
                slowest = max(slowest, time.monotonic() - started)
                time.sleep(0.1)
        finally:
            load.stop()
        refused = _refused(server)
    print(f"\n{CONNECTIONS} connections, {load.sent / 2**20:.0f} MiB of bodies sent; family RSS {idle:.0f} MiB idle, "
          f"peak {peak:.0f} MiB (chart limit {limit:.0f} MiB); {len(calls)} admission calls, slowest "
          f"{slowest * 1000:.0f} ms; trickles: " + json.dumps({o: load.outcomes.count(o) for o in set(load.outcomes)})
          + f"; refused: {({k: v for k, v in refused.items() if v})}")
    assert peak < limit, f"the server's memory passed the chart's limit: {peak:.0f} MiB"
    assert calls and all(status == 200 for status in calls), calls
    # The attack was real: both workers' budgets were full of 7 MiB bodies, and the bodies
    # that could not finish were answered 408 and made room for others.
    per_worker = ServerSettings().bodyBudgetBytes // BODY
    assert load.sent > 2 * per_worker * (BODY - 65536), load.sent
    assert refused["body_timeout"] >= 2 * per_worker and "HTTP/1.1 408 Request Timeout" in load.outcomes
    assert set(at_start) == {"malformed", "head_too_large", "host", "framing", "transfer_coding", "expectation",
                             "upgrade", "trailers_too_large", "body_too_large", "incomplete", "head_timeout",
                             "body_timeout", "busy"} and not any(at_start.values())
