"""How the service talks to the API server: one layer, every caller.

Everything the webhook, the bridge, `audit`, `explain` and `check` ask of
kube-apiserver goes through an `Api` built on a `Transport`:

- `Transport.send` is the one HTTP exchange: method, path, query, body, a
  timeout; it answers a `Reply` (status, reason, the body read whole or as a
  stream of chunks). `ClientTransport` sends it through the `kubernetes`
  client's ApiClient (its configuration, credentials, TLS and connection pool);
  the tests feed the layer bytes through a transport of their own.
- `Api.call` / `get`: one request, its JSON body decoded (status, dict);
  `Api.expect`: the same, an answer but 2xx raised as the client's ApiException.
- `Api.pages`: a paginated LIST (`limit`/`continue`), page by page, each
  decoded with orjson while the cyclic collector is paused (webhook/collector.py),
  within a deadline for the whole LIST; a non-200 page raises ApiException.
- `Api.served_version`: the first of a resource's versions the cluster serves
  (a LIST of one item: 404 tries the next).
- `Api.watch`: one WATCH request, its newline-delimited JSON events yielded as
  decoded dicts; 410 Gone (the status, or an ERROR event) raises ApiException(410).
- A write (POST, PUT, PATCH) names the layer's field manager, when it has one
  (`Api.of(client, field_manager=...)`): `managedFields` and `explain` then say
  which part of the service wrote a field (BRIDGE, REGISTRAR, CERTIFICATES), not
  the client library's default (`OpenAPI-Generator`).
- webhook/cluster/watch.py: `ListWatch`, the one list-and-watch loop (410
  relists, bookmarks, backoff) into a pluggable store;
  webhook/cluster/events.py: the one Event writer (events.k8s.io/v1).

Failures are the `kubernetes` client's own: ApiException with the answer's
status (0: TLS), urllib3's errors when nothing answered, so
webhook/cluster/failure.py words them all in one line. The client is imported
lazily: the offline commands never load it."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Protocol
from urllib.parse import quote

import orjson

from webhook import collector
from webhook.view import ClusterUnavailable

JSON = "application/json"
JSON_PATCH = "application/json-patch+json"     # a list of operations (RFC 6902)
MERGE_PATCH = "application/merge-patch+json"   # an object merged in (RFC 7386)
TIMEOUT = (5, 30)           # connect, read: one request
LIST_TIMEOUT = (5, 60)      # per page
LIST_DEADLINE = 900.0       # seconds for a whole LIST, pages included
PAGE = 500
# The field managers the service writes as (the `fieldManager` of its writes: managedFields).
BRIDGE = "workload-webhook-bridge"              # webhook/bridge/: the mirrors, their status, its Lease, its Events
REGISTRAR = "workload-webhook-registrar"        # webhook/cluster/registrar.py: the webhook configurations
CERTIFICATES = "workload-webhook-certificates"  # webhook/certificates/secret.py: its Secret, caBundles, CA ConfigMap
WRITES = ("POST", "PUT", "PATCH")


class Reply(Protocol):
    status: int
    reason: str

    def read(self) -> bytes: ...

    def chunks(self) -> Iterator[bytes]: ...

    def close(self) -> None: ...


class Transport(Protocol):
    def send(self, method: str, path: str, query: list[tuple[str, Any]], headers: dict[str, str],
             body: Any, timeout) -> Reply: ...


class _ClientReply:
    def __init__(self, resp):
        self._resp, self.status, self.reason = resp, resp.status, getattr(resp, "reason", "") or ""

    def read(self) -> bytes:
        return self._resp.read() or b""       # read to its end, urllib3 returns the connection to the pool

    def chunks(self) -> Iterator[bytes]:
        return self._resp.response.stream(65536, decode_content=True)

    def close(self) -> None:
        """A stream left before its end: its connection closed, never handed back half read."""
        self._resp.response.close()
        self._resp.response.release_conn()


class ClientTransport:
    """HTTP through a `kubernetes.client.ApiClient` (what credentials.py found)."""

    def __init__(self, api_client):
        self.client = api_client

    def send(self, method, path, query, headers, body, timeout) -> Reply:
        request = self.client.param_serialize(method, path, query_params=query, header_params=headers, body=body,
                                              auth_settings=["BearerToken"])
        return _ClientReply(self.client.call_api(*request, _request_timeout=timeout))


def path(group: str, version: str, plural: str, namespace: str | None = None, name: str | None = None) -> str:
    """A resource's collection (or one object's) path: /api/v1/... for the core group."""
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    ns = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
    return f"{base}{ns}/{plural}" + (f"/{quote(name, safe='')}" if name else "")


def decode(body: bytes) -> dict:
    try:
        data = orjson.loads(body or b"{}")
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def error(status: int, reason: str, body: bytes | None = None) -> Exception:
    """The client's own ApiException for an answer that is not the one asked for."""
    from kubernetes.client.rest import ApiException
    return ApiException(status=status, reason=reason, body=body)


def _query(query: dict | None) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in (query or {}).items() if v is not None]


@dataclass
class Api:
    transport: Transport
    #: the ApiClient behind a ClientTransport (typed clients, failure.server_of); None with another transport
    client: Any = None
    #: the `fieldManager` every write names (None: the API server's default, the client's User-Agent)
    field_manager: str | None = None

    @classmethod
    def of(cls, api_client, field_manager: str | None = None) -> "Api":
        """The layer over an ApiClient (an Api passes through, with `field_manager` when given)."""
        if isinstance(api_client, Api):
            return api_client if field_manager is None else replace(api_client, field_manager=field_manager)
        return cls(ClientTransport(api_client), api_client, field_manager)

    def send(self, method: str, path: str, query: dict | None = None, body: Any = None,
             content_type: str = JSON, accept: str = JSON, timeout=TIMEOUT) -> Reply:
        if self.field_manager and method in WRITES:
            query = {"fieldManager": self.field_manager, **(query or {})}
        headers = {"Accept": accept, **({"Content-Type": content_type} if body is not None else {})}
        return self.transport.send(method, path, _query(query), headers, body, timeout)

    def raw(self, method: str, path: str, query: dict | None = None, body: Any = None,
            content_type: str = JSON, accept: str = JSON, timeout=TIMEOUT) -> tuple[int, bytes]:
        """(status, the body's bytes)."""
        reply = self.send(method, path, query, body, content_type, accept, timeout)
        return reply.status, reply.read()

    def call(self, method: str, path: str, query: dict | None = None, body: Any = None,
             content_type: str = JSON, timeout=TIMEOUT) -> tuple[int, dict]:
        """(status, the JSON answer: the object, or the error's Status; {} when it is not JSON)."""
        status, data = self.raw(method, path, query, body, content_type, timeout=timeout)
        return status, decode(data)

    def get(self, path: str, query: dict | None = None, timeout=TIMEOUT) -> tuple[int, dict]:
        return self.call("GET", path, query, timeout=timeout)

    def expect(self, method: str, path: str, body: Any = None, query: dict | None = None,
               content_type: str = JSON, timeout=TIMEOUT) -> dict:
        """The answer's object, as a typed client would give it: ApiException unless it is 2xx."""
        reply = self.send(method, path, query, body, content_type, timeout=timeout)
        data = reply.read()
        if not 200 <= reply.status < 300:
            raise error(reply.status, reply.reason, data)
        return decode(data)

    def pages(self, path: str, query: dict | None = None, page_size: int = PAGE, timeout=LIST_TIMEOUT,
              deadline: float | None = LIST_DEADLINE, stopped: Callable[[], bool] = lambda: False,
              clock: Callable[[], float] = time.monotonic) -> Iterator[dict]:
        """A paginated LIST, one decoded page at a time (every page is read at the first one's
        resourceVersion). The collector stays paused while the caller holds a page: a page decodes
        to many containers, none in a cycle, freed by reference counting once the caller is done
        (the cyclic collector walking them again and again tripled the watch cache's LIST).
        Raises ApiException for a page not answered 200 (404: not served), ClusterUnavailable
        when the whole LIST outlasts `deadline` or `stopped()` turns true between pages."""
        started, token = clock(), None
        while True:
            reply = self.send("GET", path, {**(query or {}), "limit": page_size, "continue": token}, timeout=timeout)
            body = reply.read()
            if reply.status != 200:
                raise error(reply.status, reply.reason, body)
            with collector.paused():
                page = decode(body)
                del body
                token = (page.get("metadata") or {}).get("continue")
                yield page
                del page            # freed before the next page is read (the caller drops its own too)
            if not token:
                return
            if stopped():
                raise ClusterUnavailable(f"listing {path}: stopped")
            if deadline is not None and clock() - started > deadline:
                raise ClusterUnavailable(f"listing {path} took over {deadline:g} s")

    def served_version(self, group: str, plural: str, versions: tuple[str, ...], namespace: str | None = None,
                       timeout=LIST_TIMEOUT) -> str | None:
        """The first of `versions` the cluster serves `plural` in (a LIST of one item, in
        `namespace` when given: what a namespaced reader may list); None when none is. Any answer
        but 200 and 404 raises ApiException (403: the caller says what it could not read)."""
        for version in versions:
            reply = self.send("GET", path(group, version, plural, namespace), {"limit": 1}, timeout=timeout)
            body = reply.read()
            if reply.status == 200:
                return version
            if reply.status != 404:
                raise error(reply.status, reply.reason, body)
        return None

    def watch(self, path: str, resource_version: str | None, timeout_seconds: int,
              query: dict | None = None) -> Iterator[dict]:
        """The events of one WATCH from `resource_version`, bookmarks asked for, each
        {"type", "object"} as the server sent it; ends when the server ends the watch.
        Raises ApiException(410) for 410 Gone (the watch's answer, or its ERROR event), and
        ApiException for any other answer but 200. A half-open connection ends at the read
        timeout (`timeout_seconds` + 30 s), not never."""
        q = {**(query or {}), "watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
             "timeoutSeconds": timeout_seconds}
        reply = self.send("GET", path, q, timeout=(5, timeout_seconds + 30))
        if reply.status != 200:
            raise error(reply.status, reply.reason, reply.read())
        try:
            buffer = b""
            for chunk in reply.chunks():
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield _event(line)
            if buffer.strip():
                yield _event(buffer)
        finally:
            reply.close()


def _event(line: bytes) -> dict:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return {"type": None, "object": None}        # unreadable: the store asks for a relist
    if not isinstance(event, dict):
        return {"type": None, "object": None}
    obj = event.get("object")
    if event.get("type") == "ERROR" and isinstance(obj, dict) and obj.get("code") == 410:
        raise error(410, "Gone", line)
    return {"type": event.get("type"), "object": obj}
