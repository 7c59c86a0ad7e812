"""The kinds this service serves, written once: group, kind, plural and served
versions (preferred first). Read by the engine, the webhook registration, the
audit, the watch cache and the cluster views.

No status subresource is judged, so none is registered: kube-apiserver already
validates what status writers write (a claim status naming a spec claim, PG-1;
condition fields), and a status write refused while the webhook is down would stop
kube-scheduler's PodGroup conditions and the ResourceClaim controller's
`status.resourceClaimStatuses` on running gangs (docs/operations.md#the-webhook-is-down).
A rule that needs a status would get a webhook of its own, failurePolicy Ignore."""
from __future__ import annotations

from dataclasses import dataclass

SCHEDULING = "scheduling.k8s.io"


@dataclass(frozen=True)
class Kind:
    group: str
    kind: str
    plural: str
    versions: tuple[str, ...]

    def matches(self, group: str, version: str, kind: str) -> bool:
        return group == self.group and kind == self.kind and version in self.versions


WORKLOAD = Kind(SCHEDULING, "Workload", "workloads", ("v1beta1", "v1alpha3"))
PODGROUP = Kind(SCHEDULING, "PodGroup", "podgroups", ("v1beta1", "v1alpha3"))
COMPOSITE_PODGROUP = Kind(SCHEDULING, "CompositePodGroup", "compositepodgroups", ("v1alpha3",))
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
    """The plurals, as webhook rules name them: the objects, no subresource."""
    return [k.plural for k in SCHEDULING_KINDS]
