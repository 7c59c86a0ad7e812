"""A Transport for webhook/cluster/api.py that answers from a script and records every
request: what the unit tests of the layer's callers (the registrar, the certificate
sync, the field managers) use to see the requests made and drive the decisions taken.
The real API server: the e2e tests named in each test module."""
from __future__ import annotations

import copy
import json
from typing import NamedTuple


class Request(NamedTuple):
    method: str
    path: str
    query: dict
    headers: dict
    body: object
    timeout: object


class Reply:
    def __init__(self, status: int, body: dict | None = None):
        self.status, self.reason, self._body = status, f"HTTP {status}", json.dumps(body or {}).encode()

    def read(self) -> bytes:
        return self._body

    def chunks(self):
        yield self._body

    def close(self) -> None:
        pass


class Script:
    """A Transport answering each (method, path) with its next scripted (status, body); records
    every request. An unscripted request fails the test."""

    def __init__(self, replies: dict):
        self.replies, self.requests = {k: list(v) for k, v in replies.items()}, []

    def send(self, method, path, query, headers, body, timeout):
        self.requests.append(Request(method, path, dict(query), dict(headers), copy.deepcopy(body), timeout))
        queue = self.replies.get((method, path))
        assert queue, f"unscripted {method} {path}"
        return Reply(*queue.pop(0))

    def asked(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.requests]

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method in ("POST", "PUT", "PATCH")]


class Recorder:
    """Records every request; answers each with the next scripted status (200 when none is left)."""

    def __init__(self, *statuses: int):
        self.statuses, self.requests = list(statuses), []

    def send(self, method, path, query, headers, body, timeout):
        self.requests.append((method, dict(query)))
        return Reply(self.statuses.pop(0) if self.statuses else 200)
