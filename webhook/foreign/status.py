"""What the foreign controllers read back (BRG-6): the foreign PodGroup's status,
kept true from the in-tree group's state (its scheduler condition) and its members'
Pods. Pure functions of dicts.

- Coscheduling: the phase and counts as scheduler-plugins' own PodGroup controller
  computes them (pkg/controllers/podgroup_controller.go): Pending until minMember
  Pods exist, Scheduling, Running once minMember run (or succeeded), Failed, Finished;
  the last two are final.
- Volcano: as Volcano's scheduler does (pkg/scheduler/framework/session.go
  getPodGroupPhase): Running once minMember are scheduled, Completed once all of those
  finished; before that Inqueue, never Pending (the bridge has no queue to wait in; the
  Kubeflow training operator creates a Volcano job's Pods only once the phase leaves
  Pending); Unknown while some run and the rest cannot be scheduled. The conditions
  Scheduled / Unschedulable follow the in-tree PodGroupInitiallyScheduled condition."""
from __future__ import annotations

from typing import Any

from webhook.foreign.dialects import Dialect, min_member

SCHEDULED = "PodGroupInitiallyScheduled"
TRANSITION_ID = "workload-webhook-bridge"
COUNTS = ("running", "succeeded", "failed")
FINAL = {"coscheduling": ("Finished", "Failed"), "volcano": ()}


def _get(obj: Any, *path: str) -> Any:
    for part in path:
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _items(obj: Any, *path: str) -> list:
    """The list at `path`, or [] when there is none (or something else is there)."""
    found = _get(obj, *path)
    return found if isinstance(found, list) else []


def tally(members: tuple[dict, ...] | list[dict]) -> dict[str, int]:
    """Pods by phase, and how many were placed (bound to a node, finished ones included)."""
    out = {"total": 0, "running": 0, "succeeded": 0, "failed": 0, "scheduled": 0}
    for pod in members:
        if _get(pod, "metadata", "deletionTimestamp"):
            continue
        out["total"] += 1
        phase = _get(pod, "status", "phase")
        for key, name in (("running", "Running"), ("succeeded", "Succeeded"), ("failed", "Failed")):
            if phase == name:
                out[key] += 1
        if _get(pod, "spec", "nodeName"):
            out["scheduled"] += 1
    return out


def scheduler_condition(mirror: dict | None) -> dict | None:
    for c in _items(mirror, "status", "conditions"):
        if isinstance(c, dict) and c.get("type") == SCHEDULED:
            return c
    return None


def coscheduling(foreign: dict, mirror: dict | None, members) -> dict:
    need = max(min_member(foreign) or 1, 1)
    n = tally(members)
    done = n["running"] + n["succeeded"]
    if n["total"] < need:
        phase = "Pending"
    elif n["succeeded"] >= need:
        phase = "Finished"
    elif n["failed"] and n["failed"] + done >= need:
        phase = "Failed"
    elif done >= need:
        phase = "Running"
    else:
        phase = "Scheduling"
    return {"phase": phase, **{k: n[k] for k in COUNTS}}


def volcano(foreign: dict, mirror: dict | None, members) -> dict:
    need = max(min_member(foreign) or 0, 0)
    n = tally(members)
    cond = scheduler_condition(mirror)
    unschedulable = bool(cond) and cond.get("status") == "False"
    if n["running"] and unschedulable and n["scheduled"] < need:
        phase = "Unknown"
    elif n["scheduled"] >= need and n["scheduled"]:
        phase = "Completed" if n["succeeded"] + n["failed"] == n["scheduled"] else "Running"
    else:
        phase = "Inqueue"
    return {"phase": phase, "conditions": _volcano_conditions(foreign, cond), **{k: n[k] for k in COUNTS}}


def _volcano_conditions(foreign: dict, cond: dict | None) -> list[dict]:
    """The foreign conditions with Scheduled / Unschedulable said from the in-tree condition;
    others' conditions kept."""
    keep = [c for c in _items(foreign, "status", "conditions")
            if isinstance(c, dict) and c.get("type") not in ("Scheduled", "Unschedulable")]
    if not cond:
        return keep
    when = cond.get("lastTransitionTime")
    if cond.get("status") == "True":
        ours = {"type": "Scheduled", "status": "True", "reason": "tasks in gang are ready to be scheduled"}
    else:
        ours = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                "message": str(cond.get("message") or cond.get("reason") or "")[:1024]}
    ours = {**ours, "transitionID": TRANSITION_ID, **({"lastTransitionTime": when} if when else {})}
    return [*keep, ours]


BY_DIALECT = {"coscheduling": coscheduling, "volcano": volcano}


def desired(d: Dialect, foreign: dict, mirror: dict | None, members) -> dict | None:
    """The status to hold, or None when it is the foreign controller's to keep (a final phase,
    or no mirror yet)."""
    if mirror is None or _get(foreign, "status", "phase") in FINAL[d.name]:
        return None
    return BY_DIALECT[d.name](foreign, mirror, members)


def differs(want: dict, current: Any) -> bool:
    """Whether writing `want` changes anything. A count Go left out (omitempty) is 0."""
    current = current if isinstance(current, dict) else {}
    for key, value in want.items():
        have = current.get(key, 0 if key in COUNTS else None)
        if key == "conditions" and have is None:
            have = []
        if have != value:
            return True
    return False
