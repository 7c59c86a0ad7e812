"""Work split over forked processes, for the CLI's large inputs (reading a
YAML stream, judging its objects). Part 0 runs here while the others run in
children forked from this process: they read what they need from its memory
(copy-on-write, nothing sent to them) and send their result back as bytes.
A child that dies or fails (out of memory, an exception) has its part done
here again, so the outcome, errors included, is the one-process outcome.

Only where a fork is safe and can help: more than one usable core, the fork
start method, and no other thread running (a fork copies no thread, and a lock
another thread holds would stay held in the child)."""
from __future__ import annotations

import multiprocessing
import os
import threading
from typing import Any, Callable


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:     # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    return threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()


def parts(units: int, per_part: int, max_parts: int = 8) -> int:
    """How many parts `units` of work are worth: one per usable core, each of at least
    `per_part` units; 1 (no fork) when that is fewer than two or a fork is not safe."""
    n = min(usable_cores(), max_parts, units // per_part)
    return n if n >= 2 and can_fork() else 1


def _child(conn, work: Callable[[int], Any], part: int, encode: Callable[[Any], bytes]) -> None:
    try:
        conn.send_bytes(encode(work(part)))
        conn.close()
    except BaseException:      # the parent does this part again and reports what it raises there
        os._exit(1)


def run_parts(work: Callable[[int], Any], parts: int, encode: Callable[[Any], bytes],
              decode: Callable[[bytes], Any]) -> list[Any]:
    """[work(0), ..., work(parts - 1)]: part 0 here, the others in forked children."""
    ctx = multiprocessing.get_context("fork")
    children = []
    try:
        for part in range(1, parts):
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(send, work, part, encode), daemon=True)
            proc.start()
            send.close()
            children.append((proc, receive))
        results = [work(0)]
        for part, (proc, receive) in enumerate(children, start=1):
            try:
                results.append(decode(receive.recv_bytes()))
            except (EOFError, OSError):       # the child died or failed: its part here
                results.append(work(part))
    finally:
        for proc, receive in children:
            receive.close()
            proc.join()
    return results
