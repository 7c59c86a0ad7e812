"""The live gang model's loop, in the bridge's process (webhook/server/bridge_process.py),
writing only while this replica holds the bridge's Lease (webhook/bridge/lease.py): one
list-and-watch (webhook/cluster/watch.py) of PodGroups and one of Pods into the model's
stores (webhook/gangs/store.py); every `TICK` seconds each changed gang's state is computed
(webhook/gangs/state.py) and

- a state that held `SETTLE` seconds and differs from the last one said is written as an Event
  on the PodGroup (webhook/cluster/events.py `write`), at most `gangs.eventsPerMinute`
  (`gangs.eventsBurst` at once): a change that finds no token waits for one in a line, in
  the order the gangs' unsaid states settled, so a burst of gangs is said at the bounded
  rate, each gang's latest state is the one said, and gangs that keep changing cannot take
  every token from the rest (bench/gang_events_bench.py);
- the metrics (webhook/metrics.py): gangs by state, the oldest waiting gang's age, and the
  times from creation to quorum, to bound and to degraded, each observed once per gang.

What the model finds at its first LIST (a restart, a new leader) is taken as already said:
no Event and no time is observed for a gang's past."""
from __future__ import annotations

import datetime
import logging
import os
import threading
import time
from dataclasses import dataclass

from webhook import metrics
from webhook.cluster import events
from webhook.cluster.api import Api, path
from webhook.cluster.watch import ListWatch
from webhook.gangs import state as sm
from webhook.gangs.store import Gangs, Key, PodGroupStore, PodStore
from webhook.kinds import PODGROUP, SCHEDULING

log = logging.getLogger("workload_webhook.gangs")
TICK = 0.5
SETTLE = 1.0                     # a state must hold this long before it is said (a burst of Pods: one Event)
COMPONENT = "workload-webhook-gangs"
ACTION = "Observe"
TIMEOUT = (5, 15)


@dataclass(slots=True)
class Seen:
    """The model's memory of one gang."""
    status: sm.Status
    changed: float
    said: tuple | None = None
    placed: bool = False
    quorum: bool = False
    bound: bool = False
    degraded: bool = False
    deferred: bool = False


class Model:
    """`write(namespace, event)` writes an Event; `clock` is wall time (creationTimestamps are)."""

    def __init__(self, settings, write=None, clock=time.time, api_version: str = "v1beta1",
                 instance: str = COMPONENT):
        self.settings, self.write, self.clock = settings, write, clock
        self.api_version, self.instance = api_version, instance
        self.bucket = events.TokenBucket(settings.eventsPerMinute, settings.eventsBurst, clock)
        self.gangs = Gangs()
        self.seen: dict[Key, Seen] = {}
        self.primed = False
        self.line: dict[Key, None] = {}      # gangs with a settled state not said yet, first come first
        self._outcomes = {o: metrics.GANG_EVENTS.labels(o) for o in metrics.GANG_EVENT_OUTCOMES}

    # -- pure-ish step: the stores' changes in, Events and metrics out ----------------------

    def status(self, key: Key) -> sm.Status | None:
        seen = self.seen.get(key)
        return seen.status if seen else None

    def step(self) -> None:
        now = self.clock()
        for key in self.gangs.take_dirty():
            group, members = self.gangs.snapshot(key)
            if group is None or group.deleting:
                self.seen.pop(key, None)
                continue
            old = self.seen.get(key)
            status = sm.state(group, members, was_scheduled=bool(old and old.placed))
            if old is None:
                old = self.seen[key] = Seen(status, now, said=status.key() if not self.primed else None)
                self._timings(old, group, status, now, observe=self.primed)
            elif status != old.status:
                if status.key() != old.status.key():
                    old.changed = now
                old.status = status
                self._timings(old, group, status, now, observe=True)
        self.primed = True
        self._say(now)
        self._gauges(now)

    def _timings(self, seen: Seen, group: sm.GangGroup, status: sm.Status, now: float, observe: bool) -> None:
        c, m = status.counts, status.min_count
        seen.placed = seen.placed or sm.placed(status)
        since = max(0.0, now - group.created) if group.created else None
        for flag, reached, histogram in (("quorum", c.exist >= m or seen.placed, metrics.GANG_QUORUM_SECONDS),
                                         ("bound", c.bound + c.succeeded >= m, metrics.GANG_BOUND_SECONDS),
                                         ("degraded", status.state == sm.DEGRADED, metrics.GANG_DEGRADED_SECONDS)):
            if reached and not getattr(seen, flag):
                setattr(seen, flag, True)
                if observe and since is not None:
                    histogram.observe(since)

    def _say(self, now: float) -> None:
        # The line, not the order gangs were first seen: the first gangs, changing again and
        # again, would otherwise take every token and the rest would never be said.
        for key, seen in self.seen.items():
            if key not in self.line and seen.status.key() != seen.said and now - seen.changed >= SETTLE:
                self.line[key] = None
        out = False
        for key in list(self.line):
            seen = self.seen.get(key)
            if seen is None or seen.status.key() == seen.said:
                del self.line[key]              # deleted, or back to the state said
                continue
            if now - seen.changed < SETTLE:
                continue                        # changed again: keeps its place, said once it holds
            out = out or not self.bucket.take()
            if out:
                if not seen.deferred:
                    seen.deferred = True
                    self._outcomes["rate_limited"].inc()
                continue
            del self.line[key]
            seen.deferred = False
            seen.said = seen.status.key()
            self._event(key, seen.status)

    def event_for(self, key: Key, status: sm.Status, now: datetime.datetime, suffix: str) -> dict:
        group = self.gangs.groups.get(key)
        regarding = {"apiVersion": f"{SCHEDULING}/{self.api_version}", "kind": PODGROUP.kind, "name": key[1],
                     "namespace": key[0], "uid": group.uid if group else ""}
        reason = status.reason and status.state in (sm.WAITING_FOR_CAPACITY, sm.FAILED)
        return events.regarding_event(regarding, sm.REASONS[status.state],
                                      f"gang {status.line()}" + (f"; minCount {status.min_count}" if not reason else ""),
                                      status.state in sm.WARNINGS, ACTION, COMPONENT, self.instance, now, suffix)

    def _event(self, key: Key, status: sm.Status) -> None:
        if self.write is None:
            return
        event = self.event_for(key, status, datetime.datetime.now(datetime.timezone.utc),
                               f"{time.time_ns():x}{os.getpid() & 0xffff:04x}")
        try:
            self.write(key[0], event)
            self._outcomes["written"].inc()
        except Exception as exc:              # refused (RBAC, a terminating namespace) or no answer
            self._outcomes["failed"].inc()
            log.warning("gangs: event %s on PodGroup %s/%s not written: %s", event["reason"], key[0], key[1],
                        events.failure_reason(exc))

    def _gauges(self, now: float) -> None:
        by_state = dict.fromkeys(sm.STATES, 0)
        oldest = 0.0
        for key, seen in self.seen.items():
            by_state[seen.status.state] += 1
            if seen.status.state in sm.WAITING:
                group = self.gangs.groups.get(key)
                if group is not None and group.created:
                    oldest = max(oldest, now - group.created)
        for name, n in by_state.items():
            metrics.GANGS.labels(name).set(n)
        metrics.GANG_OLDEST_WAITING.set(oldest)

    def reset(self) -> None:
        self.gangs, self.seen, self.primed, self.line = Gangs(), {}, False, {}
        for name in sm.STATES:
            metrics.GANGS.labels(name).set(0)
        metrics.GANG_OLDEST_WAITING.set(0)
        metrics.GANG_MODEL_SYNCED.set(0)


class Following:
    """The bridge's Lease as the bridge's own loop holds it in this process (the same identity):
    read, never written, so the two loops of one process never race each other's writes."""

    def __init__(self, lease):
        self.lease = lease

    def try_hold(self) -> bool:
        return self.lease.holder() == self.lease.identity

    def release(self) -> None:
        """The bridge's loop gives the Lease up."""


class Runner:
    """The model's loop: lead while the Lease is held (watch, step), wait otherwise."""

    def __init__(self, api_client, settings, lease, duration: int, identity: str):
        self.api = Api.of(api_client)
        self.lease, self.duration = lease, duration
        self.model = Model(settings, write=lambda ns, ev: events.write(self.api, ns, ev, timeout=TIMEOUT[1]),
                           instance=identity)
        self.model.reset()                 # the series at 0 from the start: a replica that never leads says 0

    def _podgroups(self) -> str:
        version = self.api.served_version(SCHEDULING, PODGROUP.plural, PODGROUP.versions, timeout=TIMEOUT)
        if version is None:
            raise RuntimeError("the cluster serves no scheduling.k8s.io PodGroups")
        self.model.api_version = version
        return path(SCHEDULING, version, PODGROUP.plural)

    def lead(self, stop: threading.Event) -> None:
        period, deadline = max(1.0, self.duration / 3), self.duration * 2 / 3
        self.model.reset()
        groups, pods = PodGroupStore(self.model.gangs), PodStore(self.model.gangs)
        watchers = [ListWatch(self.api, self._podgroups, groups, name="gangs-watch-podgroups", logger=log,
                              label="gangs PodGroups"),
                    ListWatch(self.api, "/api/v1/pods", pods, name="gangs-watch-pods", logger=log, label="gangs Pods")]
        for w in watchers:
            w.start()
        renewed = checked = time.monotonic()
        try:
            while not stop.wait(TICK):
                now = time.monotonic()
                if now - checked >= period:
                    checked = now
                    if self.lease.try_hold():
                        renewed = now
                    elif now - renewed > deadline:
                        log.warning("gangs: the Lease is not ours (%.0f s): the model stops", now - renewed)
                        return
                if groups.synced and pods.synced:
                    self.model.step()
                    metrics.GANG_MODEL_SYNCED.set(1)     # after the first step: what it listed is primed
        finally:
            for w in watchers:
                w.stop()
            self.model.reset()

    def run(self, stop: threading.Event) -> None:
        log.info("gangs: the live gang model is on; it runs while this replica holds the bridge's Lease")
        while not stop.is_set():
            try:
                if self.lease.try_hold():
                    self.lead(stop)
                    continue
            except Exception as exc:            # never let the process die of one failure
                log.warning("gangs: %s", (str(exc).splitlines() or [type(exc).__name__])[0][:300])
            stop.wait(max(1.0, self.duration / 3))
        self.lease.release()
