"""List, then watch, one resource into a small store of projected dicts, calling back
with each object that changed (old, new); a 410 or an unreadable event relists, and a
relist reports what vanished meanwhile. The bridge watches few objects (the foreign
PodGroups, their mirrors, the Pods it joined), so they are kept as plain dicts.

`Store.apply` and `Store.replace` are pure; `Watcher` is the thread around them."""
from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable

log = logging.getLogger("workload_webhook.bridge")
RELIST = "relist"
PAGE = 500
LIST_TIMEOUT = (5, 60)

NOT_SERVED_WAIT = 30.0

Change = Callable[[dict | None, dict | None], None]


def key_of(obj: Any) -> tuple[str, str] | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not meta.get("name"):
        return None
    return str(meta.get("namespace") or ""), str(meta["name"])


class NotServed(Exception):
    """The collection answered 404: its resource is not served."""


class Store:
    def __init__(self, project: Callable[[dict], dict], on_change: Change):
        self.objects: dict[tuple[str, str], dict] = {}
        self.project, self.on_change = project, on_change
        self.resource_version: str | None = None
        self.synced = False

    def _put(self, obj: dict) -> None:
        key = key_of(obj)
        if key is None:
            return
        new = self.project(obj)
        old = self.objects.get(key)
        self.objects[key] = new
        if old != new:
            self.on_change(old, new)

    def replace(self, items: list[dict], resource_version: str | None) -> None:
        """A whole LIST: what it lacks was deleted while nobody watched."""
        listed = {key_of(i) for i in items} - {None}
        for key in [k for k in self.objects if k not in listed]:
            self.on_change(self.objects.pop(key), None)
        for item in items:
            self._put(item)
        self.resource_version, self.synced = resource_version, True

    def apply(self, event: dict) -> str | None:
        """One event as kubernetes.watch.Watch.stream yields it; RELIST to start over."""
        kind, obj = event.get("type"), event.get("raw_object", event.get("object"))
        if not isinstance(obj, dict) or kind == "ERROR":
            return RELIST
        if kind in ("ADDED", "MODIFIED"):
            self._put(obj)
        elif kind == "DELETED":
            key = key_of(obj)
            if key in self.objects:
                self.on_change(self.objects.pop(key), None)
        elif kind != "BOOKMARK":
            return RELIST
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.resource_version = rv
        return None


class Watcher(threading.Thread):
    """`path`: the collection, e.g. /apis/scheduling.x-k8s.io/v1alpha1/podgroups or /api/v1/pods."""

    def __init__(self, api_client, path: str, store: Store, label_selector: str | None = None,
                 watch_seconds: int = 300):
        super().__init__(name=f"bridge-watch{path}", daemon=True)
        self.api, self.path, self.store = api_client, path, store
        self.selector, self.watch_seconds = label_selector, watch_seconds
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()

    def _call(self, query: dict, timeout, stream: bool = False):
        params = [(k, v) for k, v in query.items() if v is not None]
        request = self.api.param_serialize("GET", self.path, query_params=params,
                                           header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
        return self.api.call_api(*request, _request_timeout=timeout)

    def _list(self) -> None:
        items, token, version = [], None, None
        while True:
            resp = self._call({"limit": PAGE, "continue": token, "labelSelector": self.selector}, LIST_TIMEOUT)
            body = resp.read() or b"{}"
            if resp.status == 404:                # the CRD is not installed (yet): nothing of it exists
                self.store.replace([], None)
                raise NotServed(f"{self.path} is not served (is its CRD installed?); listed again in "
                                f"{NOT_SERVED_WAIT:g} s")
            try:
                page = json.loads(body)
            except ValueError:
                page = {"message": body[:200].decode(errors="replace")}
            if resp.status != 200:
                raise RuntimeError(f"LIST {self.path}: HTTP {resp.status}: {page.get('message', '')}"[:300])
            items += [i for i in page.get("items") or [] if isinstance(i, dict)]
            meta = page.get("metadata") or {}
            version = version or meta.get("resourceVersion")
            token = meta.get("continue")
            if not token or self.stopped.is_set():
                break
        self.store.replace(items, version)

    def _watch(self) -> str | None:
        query = {"watch": "true", "resourceVersion": self.store.resource_version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": self.watch_seconds, "labelSelector": self.selector}
        resp = self._call(query, (5, self.watch_seconds + 30))
        if resp.status == 410:
            return RELIST
        if resp.status != 200:
            raise RuntimeError(f"WATCH {self.path}: HTTP {resp.status}")
        try:
            buffer = b""
            for chunk in resp.response.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    event = {"type": event.get("type"), "raw_object": event.get("object")}
                    if event["type"] == "ERROR" and (event["raw_object"] or {}).get("code") == 410:
                        return RELIST
                    if self.store.apply(event) == RELIST or self.stopped.is_set():
                        return RELIST
        finally:
            resp.response.release_conn()
        return None

    def run(self) -> None:
        backoff = 0.5
        relist, said_not_served = True, False
        while not self.stopped.is_set():
            try:
                if relist:
                    self._list()
                    relist = False
                relist = self._watch() == RELIST
                backoff = 0.5
            except NotServed as exc:
                if not said_not_served:
                    log.info("bridge: %s", exc)
                    said_not_served = True
                relist = True
                self.stopped.wait(NOT_SERVED_WAIT)
            except Exception as exc:        # network, 403, a server restart: say so, back off, relist
                log.warning("bridge: watching %s failed: %s", self.path, (str(exc).splitlines() or [""])[0][:200])
                relist = True
                self.stopped.wait(backoff)
                backoff = min(backoff * 2, 30.0)
