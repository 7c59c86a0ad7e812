"""`audit`'s answer to "can the bridge be switched off?" (docs/migrating-to-in-tree-gangs.md):
every Coscheduling and Volcano PodGroup in the cluster, the job that owns it (its
controller), and whether the bridge mirrors it. Each one is a job whose controller
still speaks a foreign scheduler's API: with the bridge off it would wait for a
scheduler that is not there. `dependents` is pure; `read` lists, page by page."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from webhook.foreign.dialects import ALL, BRIDGE_LABEL, BY_NAME
from webhook.foreign.mirror import CURRENT, ours
from webhook.cluster.api import Api, path
from webhook.kinds import PODGROUP, SCHEDULING, metadata

TIMEOUT = (5, 60)


@dataclass(frozen=True)
class Dependent:
    dialect: str
    namespace: str
    name: str
    owner: str | None            # Kind/name of its controller: the job
    mirrored: bool
    phase: str | None
    bridged: bool                # bridge.<dialect> is on in this config


def dependents(foreign: dict[str, list[dict]], mirrors: list[dict], bridge) -> list[Dependent]:
    """`foreign`: dialect name -> its PodGroups; `mirrors`: in-tree PodGroups with the bridge's label."""
    by_key = {(metadata(m).get("namespace"), metadata(m).get("name")): m for m in mirrors}
    out = []
    for name, items in foreign.items():
        d = BY_NAME[name]
        for obj in items:
            meta = metadata(obj)
            owner = next((f"{r.get('kind')}/{r.get('name')}" for r in meta.get("ownerReferences") or []
                          if isinstance(r, dict) and r.get("controller")), None)
            mirror = by_key.get((meta.get("namespace"), meta.get("name")))
            status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
            out.append(Dependent(d.name, str(meta.get("namespace") or ""), str(meta.get("name") or ""), owner,
                                 mirror is not None and ours(mirror, d, obj) == CURRENT, status.get("phase"),
                                 d.name in bridge.dialects))
    return sorted(out, key=lambda x: (x.namespace, x.name, x.dialect))


def _list(api: Api, group: str, version: str, plural: str, page_size: int,
          selector: str | None = None) -> list[dict] | None:
    """Every object of a resource (None: not served)."""
    from kubernetes.client.rest import ApiException
    items = []
    try:
        for page in api.pages(path(group, version, plural), {"labelSelector": selector}, page_size, TIMEOUT):
            items += [i for i in page.get("items") or [] if isinstance(i, dict)]
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return items


def read(api_client, page_size: int = 500) -> tuple[dict[str, list[dict]], list[dict], list[str]]:
    """(foreign PodGroups by dialect, the bridge's mirrors, what was not served)."""
    from kubernetes.client.rest import ApiException
    api = Api.of(api_client)
    foreign, skipped = {}, []
    for d in ALL:
        try:
            found = _list(api, d.group, d.version, d.plural, page_size)
        except ApiException as exc:
            if exc.status != 403:
                raise
            skipped.append(f"{d.resource}: forbidden (RBAC): jobs that depend on the bridge not listed")
            continue
        if found is None:
            skipped.append(f"{d.resource}: not served by this cluster")
        else:
            foreign[d.name] = found
    mirrors = []
    if any(foreign.values()):
        for version in PODGROUP.versions:
            found = _list(api, SCHEDULING, version, "podgroups", page_size, BRIDGE_LABEL)
            if found is not None:
                mirrors = found
                break
    return foreign, mirrors, skipped


def lines(deps: list[Dependent], served: bool) -> list[str]:
    """The text section (nothing when no foreign PodGroup API is served)."""
    if not served:
        return []
    if not deps:
        return ["bridge: no job depends on it (no Coscheduling or Volcano PodGroup): it can be switched off"]
    out = [f"{'BRIDGE':<13} {'PODGROUP':<32} {'JOB (OWNER)':<32} STATE"]
    for x in deps:
        state = f"mirrored, phase {x.phase or '-'}" if x.mirrored else \
            ("not mirrored yet" if x.bridged else f"not mirrored: bridge.{x.dialect} is off: waits for a scheduler")
        out.append(f"{x.dialect:<13} {x.namespace + '/' + x.name:<32} {x.owner or '-':<32} {state}")
    jobs = len({(x.namespace, x.owner or x.name) for x in deps})
    out.append(f"bridge: {jobs} job(s) still depend on it ({len(deps)} foreign PodGroup(s)): their controllers speak "
               "Coscheduling or Volcano; see docs/migrating-to-in-tree-gangs.md")
    return out


def as_json(deps: list[Dependent], served: bool) -> dict:
    return {"served": served, "dependents": [asdict(x) for x in deps],
            "jobs": len({(x.namespace, x.owner or x.name) for x in deps})}
