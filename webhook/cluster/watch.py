"""The one list-and-watch loop (webhook/cluster/api.py has the layer it runs on):
LIST a collection page by page into a store, WATCH from the LIST's resourceVersion,
and start over from a LIST when the watch expires (410 Gone) or the store cannot
read an event; bookmarks move the resourceVersion on without a LIST; failures back
off (0.5 s doubling to BACKOFF_MAX); a collection not served (404) is listed as
empty and asked again every `not_served_wait` seconds.

A store is what a watch keeps: the webhook's packed PodGroups
(webhook/cluster/store.py), the bridge's dicts with a change callback
(webhook/bridge/watch.py). Anything with the `Store` methods will do: a new
watched model is a store, a collection path and maybe a label selector:

    ListWatch(Api.of(api_client), "/api/v1/pods", MyStore(), selector="app=x").start()

The events reach `Store.apply` as the server sent them ({"type", "object"}), so a
store is a pure function of its events, tested without any server."""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Protocol

from webhook.cluster.api import LIST_DEADLINE, LIST_TIMEOUT, Api

RELIST = "relist"
GONE = 410
NOT_SERVED = 404
BACKOFF_START, BACKOFF_MAX = 0.5, 30.0
NOT_SERVED_WAIT = 30.0
log = logging.getLogger("workload_webhook.cluster")


def apply_event(store: "Store", event: dict, put: Callable[[dict], None], drop: Callable[[dict], None]) -> str | None:
    """The one reading of a watch event, for every store's `apply`: ADDED and MODIFIED `put` the
    object, DELETED `drop`s it, a BOOKMARK only moves the store's resourceVersion on (as every
    event does); ERROR (410 Gone or another), an event without an object or of an unknown type
    is RELIST. The object is the event's dict (`raw_object` when the client decoded `object`)."""
    kind, obj = event.get("type"), event.get("raw_object")
    if not isinstance(obj, dict):
        obj = event.get("object")
    if not isinstance(obj, dict) or kind == "ERROR":
        return RELIST
    if kind == "ADDED" or kind == "MODIFIED":
        put(obj)
    elif kind == "DELETED":
        drop(obj)
    elif kind != "BOOKMARK":
        return RELIST
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    if rv:
        store.resource_version = rv
    return None


class Store(Protocol):
    resource_version: str | None
    synced: bool

    def begin(self) -> None:
        """A LIST starts."""

    def add(self, items: list) -> None:
        """One page of it."""

    def finish(self, resource_version: str | None) -> None:
        """The LIST is complete: the whole truth at `resource_version` (what it lacked is gone)."""

    def apply(self, event: dict) -> str | None:
        """One watch event; RELIST when the watch must start over from a LIST."""


def key_of(obj) -> tuple[str, str] | None:
    """(namespace, name) of an object, None when it has no name."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not meta.get("name"):
        return None
    return str(meta.get("namespace") or ""), str(meta["name"])


def one_line(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    if status:
        return f"{status} {getattr(exc, 'reason', '') or ''}".rstrip()
    return (str(exc).splitlines() or [""])[0][:200] or type(exc).__name__


class ListWatch(threading.Thread):
    """LIST then WATCH one collection into `store`, for ever (until `stop`).

    `collection`: its path, or a function that finds it (called before each LIST until it
    answers; it may raise, which backs off like any failure). `on_listed` and `on_fresh` are
    hooks for a caller's metrics."""

    def __init__(self, api: Api, collection: str | Callable[[], str], store: Store, selector: str | None = None,
                 watch_seconds: int = 300, page_size: int = 500, list_deadline: float = LIST_DEADLINE,
                 not_served_wait: float = NOT_SERVED_WAIT, name: str | None = None,
                 logger: logging.Logger = log, label: str = ""):
        self.collection = collection if callable(collection) else (lambda: collection)
        super().__init__(name=name or f"watch{collection if isinstance(collection, str) else ''}", daemon=True)
        self.api, self.store, self.selector = api, store, selector
        self.watch_seconds, self.page_size, self.list_deadline = watch_seconds, page_size, list_deadline
        self.not_served_wait, self.log, self.label = not_served_wait, logger, label
        self.path: str | None = None
        self.stopped = threading.Event()
        self.relists = 0            # LISTs completed (the first one included)
        self.bookmarks = 0
        self.pauses: list[float] = []   # the last backoffs waited (a few kept, for the tests and a debugger)
        self._skip_list: str | None = None
        self.progressed = False     # this round's watch delivered an event or ended healthy

    # -- hooks ---------------------------------------------------------------------------

    def on_listed(self, how: str, relisted: bool) -> None:
        """A LIST completed (`how`: a one-line summary); `relisted`: it was not the first."""

    def on_fresh(self) -> None:
        """The store is as fresh as now: a LIST, an event, a bookmark or a watch's healthy end."""

    # -- the loop ------------------------------------------------------------------------

    def stop(self) -> None:
        self.stopped.set()

    def start_from(self, how: str) -> None:
        """The store was filled elsewhere (a LIST made by another process): watch from its
        resourceVersion at once, without a LIST of our own."""
        self._skip_list = how

    def list(self) -> str:
        """One paginated LIST into the store, within the LIST deadline."""
        if self.path is None:
            self.path = self.collection()
        started = time.monotonic()
        version, pages = None, 0
        query = {"labelSelector": self.selector}
        self.store.begin()
        for page in self.api.pages(self.path, query, self.page_size, LIST_TIMEOUT, self.list_deadline,
                                   self.stopped.is_set):
            meta = page.get("metadata") or {}
            version = version or meta.get("resourceVersion")
            self.store.add([i for i in page.get("items") or [] if isinstance(i, dict)])
            pages += 1
            del page                 # one decoded page alive at a time: not two while the next is read
        self.store.finish(version)
        self.relists += 1
        return f"{len(getattr(self.store, 'objects', ()))} objects in {pages} pages, " \
               f"{time.monotonic() - started:.2f} s, at resourceVersion {version}"

    def watch(self) -> bool:
        """One WATCH from the store's resourceVersion: True when it ended healthy (watch on),
        False when the store asked for a LIST or the loop stops."""
        query = {"labelSelector": self.selector}
        for event in self.api.watch(self.path, self.store.resource_version, self.watch_seconds, query):
            if self.store.apply(event) == RELIST or self.stopped.is_set():
                return False
            self.progressed = True
            if event.get("type") == "BOOKMARK":
                self.bookmarks += 1
            self.on_fresh()
        self.progressed = True
        self.on_fresh()                  # the server ended a healthy watch with nothing more to say
        return True

    def _pause(self, seconds: float) -> None:
        self.pauses = (self.pauses + [seconds])[-16:]
        self.stopped.wait(seconds)

    def _listed(self) -> None:
        if self._skip_list is not None:
            how, self._skip_list = self._skip_list, None
            self.on_listed(how, False)
            return
        relisting = self.relists > 0 or self.store.synced
        self.on_listed(self.list(), relisting)

    def run(self) -> None:
        backoff, said_not_served = BACKOFF_START, False
        name = self.label or self.name
        while not self.stopped.is_set():
            self.progressed = False
            try:
                self._listed()
                while not self.stopped.is_set() and self.watch():
                    pass
                if self.stopped.is_set():
                    break
                # the store asked for a LIST: paused as after a failure, so a stream of
                # unreadable events cannot spin the loop
            except Exception as exc:     # noqa: BLE001 - network, RBAC, a server restart: say so, back off, relist
                if self.stopped.is_set():
                    break                # a LIST cut short by stop(): nothing to say
                status = getattr(exc, "status", None)
                if status == GONE:
                    self.log.info("watch of %s expired (410); relisting", name)
                    continue
                if status == NOT_SERVED and self.path is not None:
                    self.store.begin()   # nothing of it exists: an empty, complete LIST
                    self.store.finish(None)
                    if not said_not_served:
                        self.log.info("%s is not served (is its CRD installed?); listed again in %g s", self.path,
                                      self.not_served_wait)
                        said_not_served = True
                    self._pause(self.not_served_wait)
                    continue
                self.log.warning("watching %s failed: %s", name, one_line(exc))
            if self.progressed:          # a watch delivered: the next failure starts over at BACKOFF_START
                backoff = BACKOFF_START
            self._pause(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)
