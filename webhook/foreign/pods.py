"""The Pod side of the foreign dialects, pure: a Coscheduling label or a Volcano
annotation names the group a Pod joins (BRG-3; the rules read it, webhook/rules/pods.py),
and a Pod that names an old scheduler is handed to the default one (BRG-4).

The join that waits for the group's mirror or says why it is missing (BRG-2), and
marks a bridged Pod for the reconciler, is webhook/mutation/foreign_join.py."""
from __future__ import annotations

from typing import Any

from webhook import formats
from webhook.foreign.dialects import DEFAULT_SCHEDULER, Dialect, enabled
from webhook.field import FieldError, Path, by_rule, invalid


def metadata_map(pod: Any, key: str) -> dict:
    """The Pod's metadata.<key> (labels, annotations) when it is a map, else {}."""
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    found = meta.get(key) if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def foreign_names(pod: Any, bridge) -> list[tuple[Dialect, str]]:
    """(dialect, group name) for each dialect that is on and whose key the Pod carries with a
    value. An empty value names no group, for both schedulers."""
    out = []
    for d in enabled(bridge):
        value = metadata_map(pod, d.pod_key_in).get(d.pod_key)
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


def handoff(pod: Any, bridge) -> list[dict]:
    """BRG-4: a Pod naming one of bridge.schedulerNames is given to the default scheduler
    (the one JSON Patch `replace` the service ever makes to a Pod; opt-in)."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    current = spec.get("schedulerName") if isinstance(spec, dict) else None
    if isinstance(current, str) and current in bridge.schedulerNames and current != DEFAULT_SCHEDULER:
        return [{"op": "replace", "path": "/spec/schedulerName", "value": DEFAULT_SCHEDULER}]
    return []
