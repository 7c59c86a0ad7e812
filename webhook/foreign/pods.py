"""The Pod side of the bridge: a Coscheduling label or a Volcano annotation names the
group a Pod joins (BRG-3), the join waits for the group's mirror or says why it is
missing (BRG-2), a bridged Pod is marked for the reconciler, and a Pod that names an
old scheduler is handed to the default one (BRG-4).

The join itself is the in-tree one (webhook.mutation.pods.plan_join): a bridged Pod
gets `spec.schedulingGroup`, the group label and the group's claims exactly as a
labelled Pod does."""
from __future__ import annotations

import functools
import time
from typing import Any, Callable

from webhook import formats
from webhook.foreign.dialects import BRIDGE_LABEL, DEFAULT_SCHEDULER, Dialect, enabled
from webhook.field import FieldError, FieldWarning, Path, by_rule, invalid, warning
from webhook.mutation import lookup

POLL_SECONDS = 0.25


def _map(pod: Any, key: str) -> dict:
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    found = meta.get(key) if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def foreign_names(pod: Any, bridge) -> list[tuple[Dialect, str]]:
    """(dialect, group name) for each dialect that is on and whose key the Pod carries with a
    value. An empty value names no group, for both schedulers."""
    out = []
    for d in enabled(bridge):
        value = _map(pod, d.pod_key_in).get(d.pod_key)
        if isinstance(value, str) and value:
            out.append((d, value))
    return out


def membership(pod: Any, bridge, name: str | None, named_by: str) -> tuple[str | None, list[FieldError]]:
    """The group once the foreign keys are read too (BRG-3): `name` is what the Pod's own
    in-tree label or spec.schedulingGroup named (`named_by` says which), if anything.
    The in-tree name wins: a controller that speaks the in-tree API (a batch/v1 Job with
    WorkloadWithJob puts its Pods in its own PodGroup) is obeyed, and a foreign key that
    disagrees is ignored (`ignored` says so at mutation). Two foreign keys naming two
    groups, or one that cannot name a PodGroup, with no in-tree name: denied."""
    if name is not None:
        return name, []
    errors: list[FieldError] = []
    for d, value in foreign_names(pod, bridge):
        path = Path("metadata", d.pod_key_in).key(d.pod_key)
        if problem := formats.dns_subdomain(value):
            errors += by_rule([invalid(path, value, f"must name a {d.title} PodGroup: {problem}")], "BRG-3")
        elif name is None:
            name, named_by = value, str(path)
        elif value != name:
            errors += by_rule([invalid(path, value, f"names {d.title} PodGroup {value!r}, but {named_by} names "
                                                    f"{name!r}; the Pod would join two groups")], "BRG-3")
    return name, errors


def _ignored(names: list[tuple[Dialect, str]], name: str) -> list[FieldWarning]:
    """Warnings for the foreign keys that name another group than the one the Pod joins."""
    return [warning(Path("metadata", d.pod_key_in).key(d.pod_key), f"{value!r} ignored: the Pod joins PodGroup {name!r}",
                    "BRG-3") for d, value in names if value != name]


def await_mirror(view, namespace: str, name: str, timeout: float,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> lookup.Found | None:
    """The lookup of the mirror, once it appeared or the wait of at most `timeout` ended (a
    live cluster only: None with a view that is not, which is not asked; an unavailable
    cluster ends the wait). In the server's event loop the first miss raises NeedsNetwork,
    and the wait runs in the lookup pool (webhook/view.py)."""
    if not getattr(view, "authoritative", False):
        return None
    deadline = clock() + timeout
    while True:
        found = lookup.find(view, namespace, name)
        if found.outcome is not lookup.MISSING or clock() + POLL_SECONDS > deadline:
            return found
        sleep(POLL_SECONDS)


def _said(d: Dialect, found: lookup.Found, name: str, namespace: str, deny: bool) -> lookup.Said:
    """The lookup's words, with a missing mirror said as such (BRG-2) instead of POD-5."""
    if not found.outcome.missing or (found.outcome is lookup.NO_VIEW and not deny):
        return lookup.said(found, name, namespace, deny)
    if deny:
        why = (f"the bridge has not mirrored {d.title} PodGroup {name!r} in namespace {namespace!r} "
               f"(bridge.{d.name} on in the serving config? the {d.title} PodGroup created?)")
        return tuple(by_rule([invalid(lookup.GROUP_NAME, name, f"PodGroup {name!r} does not exist yet: {why}")],
                             "BRG-2")), ()
    return (), (warning(lookup.GROUP_NAME, f"no mirror of {d.title} PodGroup {name!r} yet; the Pod waits for it",
                        "BRG-2"),)


def plan_join(pod: dict, name: str, namespace: str, cfg, view, join_fn):
    """The in-tree join (`join_fn`, webhook.mutation.pods.plan_join) of a Pod whose group a
    foreign key named, with the mirror awaited (pods.onMissingPodGroup: deny) and looked up
    once, a missing mirror said as such (BRG-2), and the bridge's label added."""
    names = foreign_names(pod, cfg.bridge)
    d = next((d for d, value in names if value == name), None)      # the dialect whose key named it
    if d is None:
        join = join_fn(pod, name, namespace, cfg, view)
        return join._replace(warnings=(*join.warnings, *_ignored(names, name)))
    found = await_mirror(view, namespace, name, cfg.server.lookupTimeoutSeconds) \
        if cfg.onMissingPodGroup == "deny" else None
    join = join_fn(pod, name, namespace, cfg, view, found=found, said=functools.partial(_said, d))
    labels = join.labels
    if BRIDGE_LABEL not in _map(pod, "labels") and all(k != BRIDGE_LABEL for k, _ in labels):
        labels = (*labels, (BRIDGE_LABEL, d.name))
    return join._replace(labels=labels)


def handoff(pod: Any, bridge) -> list[dict]:
    """BRG-4: a Pod naming one of bridge.schedulerNames is given to the default scheduler
    (the one JSON Patch `replace` the service ever makes to a Pod; opt-in)."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    current = spec.get("schedulerName") if isinstance(spec, dict) else None
    if isinstance(current, str) and current in bridge.schedulerNames and current != DEFAULT_SCHEDULER:
        return [{"op": "replace", "path": "/spec/schedulerName", "value": DEFAULT_SCHEDULER}]
    return []
