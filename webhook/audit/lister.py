"""Every core scheduling object, every built-in workload with a pod template
(Deployments, ..., Jobs, CronJobs) and every configured target in a cluster,
page by page (`limit`/`continue`): memory follows the page size, not the
cluster. A resource the cluster does not serve is skipped and said so; so is a
workload kind the account may not list, and a ReplicaSet or Job its Deployment
or CronJob controls (judged through that owner's template)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

from webhook import kinds
from webhook.cluster.api import Api, path
from webhook.config import Config

TIMEOUT = (5, 60)


@dataclass(frozen=True)
class Resource:
    group: str
    kind: str
    plural: str
    versions: tuple[str, ...]      # tried in order; empty: the group's preferred version
    optional: bool = False         # a 403 skips it (said so) instead of failing the audit
    owner: str | None = None       # items a controller of this kind controls are judged through it


def resources(cfg: Config, served_as: Mapping[str, str] | None = None) -> list[Resource]:
    """What to list. `served_as`: a target's resource as the cluster's discovery names it
    (Kind.group -> resource); a target it lacks is listed by its `plural`, else kube's guess."""
    served_as = served_as or {}
    out = [Resource(k.group, k.kind, k.plural, k.versions) for k in kinds.SCHEDULING_KINDS]
    out += [Resource(k.group, k.kind, k.plural, k.versions, optional=True,
                     owner=kinds.OWNED_BY[k].kind if k in kinds.OWNED_BY else None) for k in kinds.POD_TEMPLATES]
    listed = {(r.group, r.plural) for r in out}
    for t in cfg.targets:
        plural = served_as.get(t.key) or t.resource
        if (t.group, plural) not in listed:
            out.append(Resource(t.group, t.kind, plural, t.versions))
    return out


def controlled_by(item: dict, kind: str) -> bool:
    refs = (item.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(r, dict) and r.get("controller") and r.get("kind") == kind for r in refs)


class Lister:
    def __init__(self, api_client, page_size: int = 500):
        self.api = Api.of(api_client)
        self.page_size = page_size
        self.skipped: list[str] = []

    def _served(self, group: str) -> tuple[str, ...]:
        """The group's versions from discovery (GET /apis/GROUP), preferred first."""
        try:
            status, data = self.api.get(f"/apis/{group}", timeout=TIMEOUT)
        except Exception:               # not served, forbidden, unreachable: the resource is skipped and said so
            return ()
        data = data if status == 200 else {}
        preferred = (data.get("preferredVersion") or {}).get("version")
        others = [v.get("version") for v in data.get("versions") or [] if isinstance(v, dict)]
        return tuple(dict.fromkeys(v for v in (preferred, *others) if isinstance(v, str) and v))

    def version(self, res: Resource) -> str | None:
        """The first version of the resource the cluster serves."""
        return self.api.served_version(res.group, res.plural, res.versions or self._served(res.group),
                                       timeout=TIMEOUT)

    def objects(self, res: Resource) -> Iterator[dict]:
        from kubernetes.client.rest import ApiException
        try:
            version = self.version(res)
        except ApiException as exc:
            if not (res.optional and exc.status == 403):
                raise
            self.skipped.append(f"{res.plural}.{res.group}: not listed (403 Forbidden for this account): "
                                "their pod templates are not judged")
            return
        if version is None:
            self.skipped.append(f"{res.plural}.{res.group}: not served by this cluster")
            return
        owned = 0
        for page in self.api.pages(path(res.group, version, res.plural), page_size=self.page_size, timeout=TIMEOUT):
            for item in page.get("items") or []:
                if not isinstance(item, dict):
                    continue
                if res.owner and controlled_by(item, res.owner):
                    owned += 1
                    continue
                item.setdefault("apiVersion", f"{res.group}/{version}")
                item.setdefault("kind", res.kind)
                yield item
        if owned:
            self.skipped.append(f"{res.plural}.{res.group}: {owned} controlled by a {res.owner}, judged through it")
