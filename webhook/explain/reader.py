"""Read what `explain` needs from a live cluster, in one namespace: the asked
object, its owners (a Job, a configured target object), Workloads, PodGroups,
CompositePodGroups, Pods, ResourceClaims and Events, page by page and bounded;
and the cluster's MutatingWebhookConfigurations when the user may read them.

Only GETs. What cannot be read (403, a resource the cluster does not serve) is
said in `problems`, never fatal unless it is the asked object itself. A server
that cannot be asked at all (unreachable, TLS, 401) is a ClusterError."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webhook.cluster.api import Api, decode, path
from webhook.view import ClusterUnavailable
from webhook.explain import foreign

TIMEOUT = (5, 30)
PAGE = 500
MAX_ITEMS = 5000          # per list: a namespace with more Pods is cut, and said so
SCHEDULING = "scheduling.k8s.io"
SCHEDULING_VERSIONS = ("v1beta1", "v1alpha3")


class ReadError(Exception):
    """The asked object does not exist, or no configured kind names it (the message says why)."""


class UnknownKind(ReadError):
    """KIND names nothing explain reads: a usage error, not an object that is not there."""


class ClusterError(Exception):
    """The API server could not be asked: unreachable, TLS, credentials refused (401), or
    the asked object forbidden (403). One line, naming the server."""


@dataclass(frozen=True)
class ServedKind:
    """Where a kind is served: group, versions tried in order, plural."""
    kind: str
    group: str
    versions: tuple[str, ...]
    plural: str


JOB = ServedKind("Job", "batch", ("v1",), "jobs")
WORKLOAD = ServedKind("Workload", SCHEDULING, SCHEDULING_VERSIONS, "workloads")
PODGROUP = ServedKind("PodGroup", SCHEDULING, SCHEDULING_VERSIONS, "podgroups")
COMPOSITE = ServedKind("CompositePodGroup", SCHEDULING, ("v1alpha3",), "compositepodgroups")
POD = ServedKind("Pod", "", ("v1",), "pods")
CLAIM = ServedKind("ResourceClaim", "resource.k8s.io", ("v1",), "resourceclaims")
EVENT = ServedKind("Event", "", ("v1",), "events")
BUILTIN = {"Job": JOB, "Workload": WORKLOAD, "PodGroup": PODGROUP, "CompositePodGroup": COMPOSITE}
#: Coscheduling and Volcano PodGroups, owners of their mirrors (webhook/explain/foreign.py).
FOREIGN = {name: ServedKind(d.kind, d.group, (d.version,), d.plural) for name, d in foreign.NAMES.items()}


def target_kinds(cfg, served_as: dict[str, str] | None = None) -> list[ServedKind]:
    """The configured targets (and profiles) as kinds explain can read; `served_as`: their
    resources as the cluster's discovery names them (ServedKind.group -> resource)."""
    served_as = served_as or {}
    return [ServedKind(t.kind, t.group, tuple(t.versions) or ("v1",), served_as.get(t.key) or t.resource)
            for t in getattr(cfg, "targets", ())]


def _path(kind: ServedKind, version: str, namespace: str | None, name: str | None = None) -> str:
    return path(kind.group, version, kind.plural, namespace, name)


@dataclass
class ObjectReader:
    api: Any
    problems: list[str] = field(default_factory=list)
    _versions: dict[str, str | None] = field(default_factory=dict)

    def __post_init__(self):
        self.layer = Api.of(self.api)

    def _cluster_error(self, exc: BaseException) -> ClusterError:
        from webhook.cluster import failure
        return ClusterError(failure.line(failure.server_of(self.api), exc))

    def _refused(self, status: int, body: bytes | None) -> None:
        """Refused credentials: nothing else will be read either."""
        if status == 401:
            from webhook.cluster.api import error
            raise self._cluster_error(error(401, "Unauthorized", body))

    def _get(self, path: str, query: dict | None = None) -> tuple[int, dict]:
        """(status, the object or the error's Status); ClusterError when nothing answered or the
        credentials were refused."""
        from kubernetes.client.rest import ApiException
        try:
            reply = self.layer.send("GET", path, query, timeout=TIMEOUT)
            body, status = reply.read(), reply.status
        except ApiException as exc:
            if not exc.status:            # the client's wrapping of a TLS failure
                raise self._cluster_error(exc) from None
            body, status = exc.body or b"{}", exc.status
        except Exception as exc:       # unreachable, TLS, timeout: said once, as the cluster's problem
            raise self._cluster_error(exc) from None
        self._refused(status, body)
        return status, decode(body)

    def version(self, kind: ServedKind, namespace: str) -> str | None:
        """The first of the kind's versions this cluster serves (webhook/cluster/api.py: a LIST of one item)."""
        from kubernetes.client.rest import ApiException
        key = f"{kind.plural}.{kind.group}"
        if key not in self._versions:
            try:
                self._versions[key] = self.layer.served_version(kind.group, kind.plural, kind.versions, namespace,
                                                                TIMEOUT)
            except ApiException as exc:
                if not exc.status:
                    raise self._cluster_error(exc) from None
                self._refused(exc.status, exc.body)
                self._versions[key] = None
                self.problems.append(f"{key}: forbidden (RBAC): not read" if exc.status == 403 else
                                     f"{key}: HTTP {exc.status}: not read")
                return None
            except Exception as exc:
                raise self._cluster_error(exc) from None
            if self._versions[key] is None:
                self.problems.append(f"{key}: not served by this cluster")
        return self._versions[key]

    def list(self, kind: ServedKind, namespace: str, **query) -> list[dict]:
        from kubernetes.client.rest import ApiException
        version = self.version(kind, namespace)
        if version is None:
            return []
        items = []
        try:
            for page in self.layer.pages(_path(kind, version, namespace), query, PAGE, TIMEOUT):
                for item in page.get("items") or []:
                    if isinstance(item, dict):
                        item.setdefault("apiVersion", f"{kind.group}/{version}" if kind.group else version)
                        item.setdefault("kind", kind.kind)
                        items.append(item)
                if len(items) >= MAX_ITEMS and (page.get("metadata") or {}).get("continue"):
                    self.problems.append(f"{kind.plural}.{kind.group}: more than {MAX_ITEMS} in {namespace}: cut")
                    break
        except ApiException as exc:
            if not exc.status:
                raise self._cluster_error(exc) from None
            self._refused(exc.status, exc.body)
            self.problems.append(f"{kind.plural}.{kind.group}: HTTP {exc.status}: list cut short")
        except ClusterUnavailable as exc:          # the LIST's deadline
            self.problems.append(f"{kind.plural}.{kind.group}: {exc}: list cut short")
        except Exception as exc:
            raise self._cluster_error(exc) from None
        return items

    def get(self, kind: ServedKind, namespace: str, name: str, asked: bool = False) -> dict | None:
        """`asked`: the object explain was asked for, whose 403 is a ClusterError, not a note."""
        from webhook.cluster import failure
        for v in kind.versions:
            status, obj = self._get(_path(kind, v, namespace, name))
            if status == 200:
                obj.setdefault("apiVersion", f"{kind.group}/{v}" if kind.group else v)
                obj.setdefault("kind", kind.kind)
                return obj
            if status == 403:
                if asked:
                    why = obj.get("message") or f"{kind.kind} {namespace}/{name}"
                    raise ClusterError(f"the API server {failure.server_of(self.api)}: 403 Forbidden: {why}"[:400])
                self.problems.append(f"{kind.kind} {namespace}/{name}: forbidden (RBAC)")
                return None
        return None

    def webhooks(self) -> list[dict]:
        status, page = self._get("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations")
        if status != 200:
            self.problems.append("mutatingwebhookconfigurations: not readable (cluster-scoped): webhooks not shown")
            return []
        return [i for i in page.get("items") or [] if isinstance(i, dict)]


def _owner_refs(objs: list[dict]) -> list[tuple[str, str, str]]:
    """(apiVersion or apiGroup, kind, name) of each Workload's controllerRef and each controller ownerReference."""
    out = []
    for o in objs:
        ref = (o.get("spec") or {}).get("controllerRef") if o.get("kind") == "Workload" else None
        if isinstance(ref, dict) and ref.get("name"):
            out.append((ref.get("apiGroup") or "", ref.get("kind") or "", ref["name"]))
        for r in (o.get("metadata") or {}).get("ownerReferences") or []:
            if isinstance(r, dict) and r.get("controller"):
                out.append((str(r.get("apiVersion") or "").split("/")[0] if "/" in str(r.get("apiVersion"))
                            else "", r.get("kind") or "", r.get("name") or ""))
    return out


def read(api, kind: str, name: str, namespace: str, targets: list[ServedKind] = ()) -> tuple[dict[str, list[dict]], list[str]]:
    """(objects for webhook.explain.tree.build, problems). Raises ReadError when the
    asked object does not exist, ClusterError when the API server cannot be asked."""
    reader = ObjectReader(api)
    known = {**BUILTIN, **{t.kind: t for t in targets}, **FOREIGN}
    lowered = {k.lower(): v for k, v in known.items()}
    asked_kind = known.get(kind) or lowered.get(kind.lower())
    if asked_kind is None:
        raise UnknownKind(f"unknown kind {kind!r}: one of job, workload, podgroup, compositepodgroup, "
                        "podgroups.scheduling.x-k8s.io, podgroups.scheduling.volcano.sh, or a configured target "
                        "(--config/--profile)")
    asked = reader.get(asked_kind, namespace, name, asked=True)
    if asked is None:
        why = "; ".join(reader.problems) or "not found"
        raise ReadError(f"{asked_kind.kind} {namespace}/{name}: {why}")
    objects: dict[str, list[dict]] = {
        "owners": [], "workloads": reader.list(WORKLOAD, namespace), "podgroups": reader.list(PODGROUP, namespace),
        "composites": reader.list(COMPOSITE, namespace) if _serves_composites(reader, namespace) else [],
        "pods": reader.list(POD, namespace), "claims": reader.list(CLAIM, namespace),
        "events": reader.list(EVENT, namespace), "webhooks": reader.webhooks()}
    owners: dict[tuple[str, str], dict] = {}
    if asked_kind not in (WORKLOAD, PODGROUP, COMPOSITE):
        owners[(asked_kind.kind, name)] = asked
    by_group = {(k.group, k.kind): k for k in known.values() if k not in (WORKLOAD, PODGROUP, COMPOSITE)}
    for group, owner_kind, owner_name in _owner_refs(objects["workloads"] + objects["podgroups"] + objects["pods"]):
        k = by_group.get((group, owner_kind))
        if k is not None and (owner_kind, owner_name) not in owners:
            found = reader.get(k, namespace, owner_name)
            if found is not None:
                owners[(owner_kind, owner_name)] = found
    objects["owners"] = [foreign.qualify(o) for o in owners.values()]
    return objects, reader.problems


def _serves_composites(reader: ObjectReader, namespace: str) -> bool:
    before = len(reader.problems)
    served = reader.version(COMPOSITE, namespace) is not None
    del reader.problems[before:]          # a cluster without the CompositePodGroup gate: nothing to say
    return served
