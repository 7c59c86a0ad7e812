"""The kinds this service serves, written once: group, kind, plural, served
versions (preferred first) and the subresources it judges. Read by the engine,
the webhook registration, the audit, the watch cache and the cluster views."""
from __future__ import annotations

from dataclasses import dataclass

SCHEDULING = "scheduling.k8s.io"


@dataclass(frozen=True)
class Kind:
    group: str
    kind: str
    plural: str
    versions: tuple[str, ...]
    subresources: tuple[str, ...] = ()

    def matches(self, group: str, version: str, kind: str) -> bool:
        return group == self.group and kind == self.kind and version in self.versions


WORKLOAD = Kind(SCHEDULING, "Workload", "workloads", ("v1beta1", "v1alpha3"))
PODGROUP = Kind(SCHEDULING, "PodGroup", "podgroups", ("v1beta1", "v1alpha3"), ("status",))
COMPOSITE_PODGROUP = Kind(SCHEDULING, "CompositePodGroup", "compositepodgroups", ("v1alpha3",), ("status",))
POD = Kind("", "Pod", "pods", ("v1",))

SCHEDULING_KINDS = (WORKLOAD, PODGROUP, COMPOSITE_PODGROUP)
#: What the cluster views know: PodGroups (watched: Pod mutation reads them on every Pod)
#: and Workloads (PG-2, read on demand: once per PodGroup create).
CACHED = (PODGROUP, WORKLOAD)
#: Every version any scheduling kind is served in, preferred first.
SCHEDULING_VERSIONS = tuple(dict.fromkeys(v for k in SCHEDULING_KINDS for v in k.versions))


def scheduling_kind(group: str, version: str, kind: str) -> Kind | None:
    return next((k for k in SCHEDULING_KINDS if k.matches(group, version, kind)), None)


def is_pod(group: str, version: str, kind: str) -> bool:
    return POD.matches(group, version, kind)


def scheduling_resources() -> list[str]:
    """Plurals and judged subresources, as webhook rules name them."""
    return [r for k in SCHEDULING_KINDS for r in (k.plural, *(f"{k.plural}/{s}" for s in k.subresources))]
