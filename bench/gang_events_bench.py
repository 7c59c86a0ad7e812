"""Gang Events benchmark: the live gang model's Event write rate under a burst of gangs.

1,000 PodGroups (gangs of 8) are created at once and their members arrive over two
seconds (waiting for members, then for capacity: Unschedulable), all are scheduled at
t = 10 s and all lose a member at t = 20 s (degraded): three or four state changes per gang
within seconds. The model (webhook/gangs/model.py) is fed as its watches feed it (each
change through its store's `apply`, webhook/gangs/store.py) and stepped every TICK, as
`Runner.lead` steps it, on a simulated clock (the model's and its token bucket's: what is
measured is the model's write rate, not the wall time it takes to drain; a real run at 120
a minute takes minutes). Its writer is the service's one Event writer
(webhook/cluster/events.py `write`) over a transport of its own that counts each POST at
the writer's boundary and answers 201: no API server, none is needed to count what the
model sends it.

Prints: the state changes the model saw, the Events written, how many changes were
coalesced (never said: a newer state of the same gang was said instead) and the
`workload_webhook_gang_events_total{outcome}` counts; the most writes in any 1 s, 10 s and
60 s window against the bound (`eventsBurst` + `eventsPerMinute` x window); the backlog
(gangs whose latest state is not said yet) at its peak and when it drained; how long a
gang's latest state waited to be said (p50, p99, max); and the CPU time of the model's
steps (the only timed figure: real time.perf_counter around each step).

    python bench/gang_events_bench.py [--gangs 1000] [--gang 8] [--per-minute 120] [--burst 30]
                                      [--horizon 3600] [--json FILE]"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from prometheus_client import REGISTRY  # noqa: E402

from webhook.cluster import events  # noqa: E402
from webhook.cluster.api import Api  # noqa: E402
from webhook.config import GangSettings  # noqa: E402
from webhook.gangs.model import TICK, Model  # noqa: E402
from webhook.gangs.store import PodGroupStore, PodStore  # noqa: E402

from gang_bench import Reply  # noqa: E402  (bench/ is the script's own directory on sys.path)

START = 1_796_200_000.0          # the simulated wall clock at t = 0 (the PodGroups' creationTimestamp)
CREATED = "2026-12-02T09:46:40Z"  # START as a timestamp
SCHEDULED_AT, DEGRADED_AT = 10.0, 20.0
CHURN_FROM, CHURN_EVERY = 30.0, 2.0   # --churn: the first gangs flap scheduled / degraded from here on
WINDOWS = (1, 10, 60)


class Clock:
    def __init__(self):
        self.now = START

    def __call__(self) -> float:
        return self.now


class Sink:
    """The Event writer's transport: each POST counted at the simulated time it is sent."""

    def __init__(self, clock: Clock):
        self.clock, self.at, self.bytes, self.reasons = clock, [], 0, {}

    def send(self, method, path, query, headers, body, timeout):
        assert method == "POST" and path.endswith("/events"), (method, path)
        data = json.dumps(body).encode()
        self.at.append(self.clock.now - START)
        self.bytes += len(data)
        self.reasons[body["reason"]] = self.reasons.get(body["reason"], 0) + 1
        return Reply(data, 201, "Created")


def podgroup(i: int, gang: int, scheduled: bool = False) -> dict:
    cond = {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"} if scheduled else \
        {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable"}
    return {"metadata": {"name": f"job-{i:04d}", "namespace": f"team-{i % 20:02d}", "uid": f"uid-{i:04d}",
                         "resourceVersion": "1", "creationTimestamp": CREATED},
            "spec": {"schedulingPolicy": {"gang": {"minCount": gang}}},
            "status": {"conditions": [cond] if scheduled else []}}


def pod(i: int, k: int, running: bool = False) -> dict:
    spec = {"containers": [{"name": "train", "image": "registry.example/train:1.2"}],
            "schedulingGroup": {"podGroupName": f"job-{i:04d}"}, **({"nodeName": f"node-{(i + k) % 500:03d}"}
                                                                  if running else {})}
    status = {"phase": "Running"} if running else \
        {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    return {"metadata": {"name": f"job-{i:04d}-{k}", "namespace": f"team-{i % 20:02d}", "resourceVersion": "1"},
            "spec": spec, "status": status}


def script(gangs: int, gang: int) -> dict[float, list]:
    """What the watches deliver, by simulated time: (store, event type, object)."""
    out: dict[float, list] = {0.0: [("groups", "ADDED", podgroup(i, gang)) for i in range(gangs)]}
    arrivals = 4                                       # the members arrive over 4 ticks
    for tick in range(arrivals):
        out.setdefault(tick * TICK, []).extend(("pods", "ADDED", pod(i, k)) for i in range(gangs)
                                               for k in range(gang) if k % arrivals == tick)
    out[SCHEDULED_AT] = [("groups", "MODIFIED", podgroup(i, gang, scheduled=True)) for i in range(gangs)] + \
        [("pods", "MODIFIED", pod(i, k, running=True)) for i in range(gangs) for k in range(gang)]
    out[DEGRADED_AT] = [("pods", "DELETED", pod(i, gang - 1, running=True)) for i in range(gangs)]
    return out


def churn(t: float, gangs: int, gang: int) -> list:
    """The first `gangs` lose their last member and get it back, in turn, every CHURN_EVERY seconds,
    staggered by a tick (gang i from CHURN_FROM + i % 4 ticks): at every tick some have just settled."""
    out = []
    for i in range(gangs):
        since = t - CHURN_FROM - (i % 4) * TICK
        if since >= 0 and since % CHURN_EVERY == 0:
            kind = "ADDED" if since // CHURN_EVERY % 2 == 0 else "DELETED"
            out.append(("pods", kind, pod(i, gang - 1, running=True)))
    return out


def outcomes() -> dict[str, float]:
    return {o: REGISTRY.get_sample_value("workload_webhook_gang_events_total", {"outcome": o}) or 0.0
            for o in ("written", "failed", "rate_limited")}


def most_in_window(at: list[float], seconds: float) -> int:
    """The most writes in any window [t, t + seconds) (`at` sorted)."""
    return max((bisect.bisect_left(at, t + seconds) - i for i, t in enumerate(at)), default=0)


def quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def run(gangs: int, gang: int, per_minute: int, burst: int, horizon: float, churning: int = 0) -> dict:
    clock = Clock()
    sink = Sink(clock)
    api = Api(sink)
    model = Model(GangSettings(model=True, eventsPerMinute=per_minute, eventsBurst=burst),
                  write=lambda ns, ev: events.write(api, ns, ev), clock=clock)
    stores = {"groups": PodGroupStore(model.gangs), "pods": PodStore(model.gangs)}
    model.step()                                       # primed on an empty cluster: the burst is live
    before = outcomes()
    plan = script(gangs, gang)
    last_change = max(plan)
    keys: dict = {}
    changes = backlog_peak = 0
    waits: list[float] = []
    step_cpu: list[float] = []
    drained_at = None
    t = 0.0
    while t <= horizon:
        for store, kind, obj in plan.pop(t, []) + churn(t, churning, gang):
            stores[store].apply({"type": kind, "object": obj})
        said = {k: s.said for k, s in model.seen.items()}
        started = time.perf_counter()
        model.step()
        step_cpu.append(time.perf_counter() - started)
        backlog = 0
        for k, s in model.seen.items():
            key = s.status.key()
            if keys.get(k) != key:
                keys[k] = key
                changes += 1
            if int(k[1][4:]) < churning:
                continue                               # the flapping gangs: never quiet, not waited for
            if s.said != said.get(k):
                waits.append(clock.now - s.changed)
            if s.said != key:
                backlog += 1
        backlog_peak = max(backlog_peak, backlog)
        if backlog == 0 and not plan and t > last_change:
            drained_at = t
            break
        t = round(t + TICK, 6)
        clock.now = START + t
    after = outcomes()
    counted = {o: int(after[o] - before[o]) for o in after}
    written = len(sink.at)
    windows = {str(w): {"most": most_in_window(sink.at, w), "bound": int(burst + per_minute * w / 60)}
               for w in WINDOWS}
    steady = [a for a in sink.at if a >= sink.at[min(len(sink.at) - 1, burst)]] if written > burst else []
    span = (steady[-1] - steady[0]) if len(steady) > 1 else 0.0
    return {"gangs": gangs, "pods": gangs * gang, "events_per_minute": per_minute, "events_burst": burst,
            "churning": churning, "backlog_at_end": backlog,
            "state_changes": changes, "events_written": written, "event_bytes": sink.bytes,
            "coalesced": changes - written, "by_reason": sink.reasons, "outcomes": counted, "windows": windows,
            "steady_rate_per_second": round((len(steady) - 1) / span, 3) if span else 0.0,
            "first_write_s": sink.at[0] if sink.at else None, "last_write_s": sink.at[-1] if sink.at else None,
            "backlog_peak": backlog_peak, "drained_at_s": drained_at,
            "wait_s": {"p50": round(quantile(waits, 0.5), 1), "p99": round(quantile(waits, 0.99), 1),
                       "max": round(max(waits, default=0.0), 1)},
            "step_ms": {"max": round(max(step_cpu) * 1000, 2), "total": round(sum(step_cpu) * 1000, 1),
                        "steps": len(step_cpu)}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gangs", type=int, default=1000)
    p.add_argument("--gang", type=int, default=8, help="Pods per PodGroup (minCount)")
    p.add_argument("--per-minute", type=int, default=GangSettings.eventsPerMinute)
    p.add_argument("--burst", type=int, default=GangSettings.eventsBurst)
    p.add_argument("--horizon", type=float, default=3600.0, help="simulated seconds at most")
    p.add_argument("--churn", type=int, default=0, help="the first N gangs flap (scheduled, degraded) every "
                   f"{CHURN_EVERY:g} s from t = {CHURN_FROM:g} s; the backlog counts the others")
    p.add_argument("--json")
    a = p.parse_args()
    out = run(a.gangs, a.gang, a.per_minute, a.burst, a.horizon, a.churn)
    o, w = out["outcomes"], out["windows"]
    print(f"{out['gangs']:,} gangs of {a.gang} ({out['pods']:,} Pods), gangs.eventsPerMinute {a.per_minute}, "
          f"eventsBurst {a.burst}" + (f", the first {a.churn} flapping every {CHURN_EVERY:g} s" if a.churn else "")
          + ":")
    print(f"  state changes seen {out['state_changes']:,}; Events written {out['events_written']:,} "
          f"({out['event_bytes'] / 2 ** 20:.1f} MiB POSTed; "
          + ", ".join(f"{r} {n:,}" for r, n in sorted(out["by_reason"].items())) + f"), coalesced {out['coalesced']:,}; "
          f"gang_events_total written {o['written']:,}, rate_limited {o['rate_limited']:,}, failed {o['failed']}")
    print("  most writes in any window: " + ", ".join(f"{k} s {v['most']} (bound {v['bound']})" for k, v in w.items())
          + f"; after the burst {out['steady_rate_per_second']}/s")
    print(f"  backlog peak {out['backlog_peak']:,} gangs, drained at t = {out['drained_at_s']} s (simulated; "
          f"{out['backlog_at_end']:,} left at the end); "
          f"a latest state waited p50 {out['wait_s']['p50']} s, p99 {out['wait_s']['p99']} s, "
          f"max {out['wait_s']['max']} s")
    print(f"  the model's steps: {out['step_ms']['steps']:,}, longest {out['step_ms']['max']} ms, "
          f"{out['step_ms']['total']} ms CPU in all")
    over = [k for k, v in w.items() if v["most"] > v["bound"]]
    if over:
        print(f"  OVER THE BOUND in the {', '.join(over)} s windows")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
