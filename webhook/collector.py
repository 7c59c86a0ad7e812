"""The cyclic garbage collector paused while many containers that form no cycle
are built or judged (a YAML stream read, a report made, a LIST page decoded):
each of its full runs would walk all of them again, and reference counting still
frees what is dropped. Process-wide, so kept short where other work runs beside it."""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
