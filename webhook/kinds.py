"""The kinds this service serves, written once: group, kind, plural and served
versions (preferred first). Read by the engine, the webhook registration, the
audit, the watch cache and the cluster views. Besides the scheduling kinds and
the Pod: the built-in workload kinds whose pod template the Pod rules judge, and
the two that hold a batch/v1 JobSpec.

No status subresource is judged, so none is registered: kube-apiserver already
validates what status writers write (a claim status naming a spec claim, PG-1;
condition fields), and a status write refused while the webhook is down would stop
kube-scheduler's PodGroup conditions and the ResourceClaim controller's
`status.resourceClaimStatuses` on running gangs (docs/operations.md#the-webhook-is-down).
A rule that needs a status would get a webhook of its own, failurePolicy Ignore."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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

JOB = Kind("batch", "Job", "jobs", ("v1",))
CRONJOB = Kind("batch", "CronJob", "cronjobs", ("v1",))
DEPLOYMENT = Kind("apps", "Deployment", "deployments", ("v1",))
STATEFULSET = Kind("apps", "StatefulSet", "statefulsets", ("v1",))
REPLICASET = Kind("apps", "ReplicaSet", "replicasets", ("v1",))
DAEMONSET = Kind("apps", "DaemonSet", "daemonsets", ("v1",))
#: Where each workload kind holds its pod template (field names from the root).
POD_TEMPLATES: dict[Kind, tuple[str, ...]] = {
    DEPLOYMENT: ("spec", "template"), STATEFULSET: ("spec", "template"), REPLICASET: ("spec", "template"),
    DAEMONSET: ("spec", "template"), JOB: ("spec", "template"), CRONJOB: ("spec", "jobTemplate", "spec", "template"),
}
#: Where the kinds that hold a batch/v1 JobSpec hold it.
JOB_SPECS: dict[Kind, tuple[str, ...]] = {JOB: ("spec",), CRONJOB: ("spec", "jobTemplate", "spec")}
#: Workload kinds a controller creates from another one's template (judged through that owner in `audit`).
OWNED_BY = {REPLICASET: DEPLOYMENT, JOB: CRONJOB}
#: What the cluster views know: PodGroups (watched: Pod mutation reads them on every Pod)
#: and Workloads (PG-2, read on demand: once per PodGroup create).
CACHED = (PODGROUP, WORKLOAD)
#: Every version any scheduling kind is served in, preferred first.
SCHEDULING_VERSIONS = tuple(dict.fromkeys(v for k in SCHEDULING_KINDS for v in k.versions))


def scheduling_kind(group: str, version: str, kind: str) -> Kind | None:
    return next((k for k in SCHEDULING_KINDS if k.matches(group, version, kind)), None)


def is_pod(group: str, version: str, kind: str) -> bool:
    return POD.matches(group, version, kind)


def workload_kind(group: str, version: str, kind: str) -> Kind | None:
    """A built-in kind with a pod template (Deployment, ..., Job, CronJob)."""
    return next((k for k in POD_TEMPLATES if k.matches(group, version, kind)), None)


def scheduling_resources() -> list[str]:
    """The plurals, as webhook rules name them: the objects, no subresource."""
    return [k.plural for k in SCHEDULING_KINDS]


def metadata(obj: Any) -> dict:
    """An object's metadata map ({} when it has none, or not a map)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}
