"""Calls made from inside a network namespace of the harness (the real node's):
setns affects only the calling thread, so each call gets a thread of its own."""
from __future__ import annotations

import ctypes
import threading
import urllib.request


CLONE_NEWNET = 0x40000000


def in_netns(netns: str | None, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a thread of its own that first joins network namespace
    ``/run/netns/<netns>`` (setns affects only the calling thread; sockets made there stay
    in that namespace). ``netns=None``: just call it."""
    if netns is None:
        return fn(*args, **kwargs)
    out: dict = {}

    def run() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            with open(f"/run/netns/{netns}") as f:
                if libc.setns(f.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into network namespace {netns}")
            out["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller's thread
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def urlopen_in(netns: str | None, url: str, **kwargs) -> tuple[int, bytes]:
    def get() -> tuple[int, bytes]:
        with urllib.request.urlopen(url, **kwargs) as r:
            return r.status, r.read()
    return in_netns(netns, get)
