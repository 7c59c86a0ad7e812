"""The join of a Pod whose group a foreign key named (BRG-2, BRG-3): the in-tree join
(webhook.mutation.pods.plan_join), so a bridged Pod gets `spec.schedulingGroup`, the
group label and the group's claims exactly as a labelled Pod does, with the group's
mirror waited for (or why it is missing said), the foreign keys it ignores said, and
the bridge's label added for the reconciler (webhook/bridge/loop.py watches it).

Which keys name a group is webhook/foreign/pods.py (pure); this module waits."""
from __future__ import annotations

import functools
import time
from typing import Callable

from webhook.field import FieldWarning, Path, by_rule, invalid, warning
from webhook.foreign.dialects import BRIDGE_LABEL, Dialect
from webhook.foreign.pods import foreign_names, metadata_map
from webhook.mutation import lookup

POLL_SECONDS = 0.25


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
    if BRIDGE_LABEL not in metadata_map(pod, "labels") and all(k != BRIDGE_LABEL for k, _ in labels):
        labels = (*labels, (BRIDGE_LABEL, d.name))
    return join._replace(labels=labels)
