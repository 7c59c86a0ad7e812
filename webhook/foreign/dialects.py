"""The foreign PodGroup APIs the bridge understands, as data (docs/bridge.md).

Read from the projects' own definitions:
- Coscheduling: kubernetes-sigs/scheduler-plugins apis/scheduling/v1alpha1/types.go
  (PodGroupSpec, PodGroupStatus, PodGroupLabel) and manifests/coscheduling/crd.yaml;
- Volcano: volcano-sh/apis pkg/apis/scheduling/v1beta1/types.go and labels.go
  (KubeGroupNameAnnotationKey, the key Volcano's scheduler reads in
  pkg/scheduler/api/job_info.go) and volcano-sh/volcano
  config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml (no status subresource).

Each dialect says where its Pods name their group, which of its fields the in-tree
PodGroup has too (copied), and which it has not (reported, BRG-1)."""
from __future__ import annotations

import functools

from dataclasses import dataclass
from typing import Any

#: On a mirror: which dialect made it. On a Pod: the bridge joined it (the loop watches these).
BRIDGE_LABEL = "workload-webhook.k8s.io/bridge"
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True)
class Unmapped:
    """A foreign field with no in-tree equivalent, and what happens instead."""
    path: tuple[str, ...]
    instead: str                        # short, for the create warning (ADM-5: 120 characters a warning)
    ignore: tuple[Any, ...] = ()        # values that change nothing (Volcano's defaulted queue)


@dataclass(frozen=True)
class Dialect:
    name: str                  # the config key: bridge.<name>
    title: str
    group: str
    version: str
    kind: str
    plural: str
    pod_key: str               # the label or annotation whose value names the group
    pod_key_in: str            # "labels" | "annotations"
    status_subresource: bool   # Volcano's CRD has none: its status is written with the object
    mapped: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()    # foreign path -> mirror path
    unmapped: tuple[Unmapped, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def resource(self) -> str:
        """kubectl's name for it: podgroups.scheduling.x-k8s.io."""
        return f"{self.plural}.{self.group}"

    def matches(self, group: str, version: str, kind: str) -> bool:
        return (group, version, kind) == (self.group, self.version, self.kind)

    def key_path(self) -> str:
        return f"metadata.{self.pod_key_in}[{self.pod_key}]"


COSCHEDULING = Dialect(
    name="coscheduling", title="Coscheduling", group="scheduling.x-k8s.io", version="v1alpha1", kind="PodGroup",
    plural="podgroups", pod_key="scheduling.x-k8s.io/pod-group", pod_key_in="labels", status_subresource=True,
    unmapped=(
        Unmapped(("spec", "scheduleTimeoutSeconds"), "no timeout: the gang waits until minCount Pods fit"),
        Unmapped(("spec", "minResources"), "not checked: each Pod's own requests are"),
    ))

VOLCANO = Dialect(
    name="volcano", title="Volcano", group="scheduling.volcano.sh", version="v1beta1", kind="PodGroup",
    plural="podgroups", pod_key="scheduling.k8s.io/group-name", pod_key_in="annotations", status_subresource=False,
    mapped=((("spec", "priorityClassName"), ("spec", "priorityClassName")),),
    unmapped=(
        Unmapped(("spec", "queue"), "no queues: kube-scheduler orders groups by priority", ignore=("default", "")),
        Unmapped(("spec", "minResources"), "not checked: each Pod's own requests are"),
        Unmapped(("spec", "minTaskMember"), "one minCount for the whole group, none per task"),
        Unmapped(("spec", "networkTopology"), "no topology constraint is set"),
        Unmapped(("spec", "subGroupPolicy"), "no sub-groups: one gang"),
    ))

ALL = (COSCHEDULING, VOLCANO)
BY_NAME = {d.name: d for d in ALL}


def enabled(bridge) -> tuple[Dialect, ...]:
    """The dialects a config's `bridge` section switches on (asked for every request)."""
    return _by_names(bridge.dialects)


@functools.lru_cache(maxsize=None)
def _by_names(names: tuple[str, ...]) -> tuple[Dialect, ...]:
    return tuple(BY_NAME[n] for n in names)


def for_kind(bridge, group: str, version: str, kind: str) -> Dialect | None:
    return next((d for d in enabled(bridge) if d.matches(group, version, kind)), None)


def get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def min_member(obj: Any) -> int | None:
    """spec.minMember when it is a whole number (both APIs: int32, omitted when 0)."""
    value = get(obj, ("spec", "minMember"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None
