"""A target's resource name as the cluster serves it, found by kind, as kubectl and
Kyverno resolve kinds: discovery (GET /apis/GROUP, then /apis/GROUP/VERSION), or,
offline, the CustomResourceDefinitions that would serve it (`--crd`). Nothing here
guesses: a kind that is not served has no resource, and the answer says why.

`Served` maps (group, version) to {kind: resource} (None: that group/version is not
served). `resolve` and `check_rules` are pure (unit-tested); `from_cluster` does the I/O
(proven against a real API server)."""
from __future__ import annotations

import json
from typing import Iterable, Mapping

from webhook.cluster.api import Api
from webhook.targets import Target, UnknownResource, offline_resources

Served = dict[tuple[str, str], "dict[str, str] | None"]
TIMEOUT = (5, 15)
CRD_KIND = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")


def from_crds(docs: Iterable[dict]) -> Served:
    """What these CRDs serve once installed: every served version of each."""
    served: Served = {}
    for d in docs:
        if not isinstance(d, dict) or (d.get("apiVersion"), d.get("kind")) != CRD_KIND:
            continue
        spec = d.get("spec") or {}
        names = spec.get("names") or {}
        if not all(isinstance(x, str) and x for x in (spec.get("group"), names.get("kind"), names.get("plural"))):
            continue
        for v in spec.get("versions") or []:
            if isinstance(v, dict) and v.get("served", True) and isinstance(v.get("name"), str):
                served.setdefault((spec["group"], v["name"]), {})[names["kind"]] = names["plural"]
    return served


def _json(api, path: str) -> dict | None:
    status, body = Api.of(api).raw("GET", path, timeout=TIMEOUT)
    if status == 404:
        return None
    if status != 200:
        raise RuntimeError(f"GET {path}: HTTP {status}")
    data = json.loads(body or b"{}")
    return data if isinstance(data, dict) else {}


def from_cluster(api, groups: Iterable[str]) -> Served:
    """Discovery of these API groups: each served version and the kinds it serves
    (subresources left out). Raises on anything but an answer or a 404."""
    served: Served = {}
    for group in dict.fromkeys(groups):
        listing = _json(api, f"/apis/{group}")
        versions = [v.get("version") for v in (listing or {}).get("versions") or [] if isinstance(v, dict)]
        if not versions:
            served[(group, "")] = None          # the group itself is not served
        for version in versions:
            resources = _json(api, f"/apis/{group}/{version}")
            served[(group, version)] = None if resources is None else {
                r["kind"]: r["name"] for r in resources.get("resources") or []
                if isinstance(r, dict) and isinstance(r.get("name"), str) and "/" not in r["name"]
                and isinstance(r.get("kind"), str)}
    return served


def _versions(t: Target, served: Served) -> list[str]:
    return list(t.versions) or [v for (g, v) in served if g == t.group and v]


def served_as(t: Target, served: Served) -> tuple[str | None, str]:
    """(the resource serving t's kind, else None and why)."""
    found = {served[(t.group, v)][t.kind] for v in _versions(t, served)
             if served.get((t.group, v)) and t.kind in served[(t.group, v)]}
    if len(found) == 1:
        return found.pop(), ""
    if found:
        return None, f"served as {' and '.join(sorted(found))} in different versions"
    versions = _versions(t, served)
    live = [v for v in versions if served.get((t.group, v)) is not None]
    if not live:
        shown = f"{t.group}/{{{','.join(versions)}}}" if versions else f"the API group {t.group}"
        return None, f"not served: {shown} is not served (is its CRD installed?)"
    return None, f"not served: {t.group}/{{{','.join(live)}}} serves no kind {t.kind}"


def served_resources(api, targets: Iterable[Target]) -> dict[str, str]:
    """Kind.group -> the resource the cluster serves for each target's kind (an irregular
    plural found, not guessed), for reading (audit, explain); a target it does not serve, or
    all of them when discovery cannot be read, is left out: its reader says so."""
    targets = list(targets)
    if not targets:
        return {}
    try:
        served = from_cluster(api, [t.group for t in targets])
    except Exception:       # unreachable, refused: the reads that follow say it, in their own words
        return {}
    return {t.key: resource for t in targets if (resource := served_as(t, served)[0])}


def resolve(targets: Iterable[Target], served: Served, strict: bool = True) -> dict[str, str]:
    """Kind.group -> resource for every target, from what is served; an explicit `plural`
    must agree with it. `strict` (a cluster): every target must be served. Not strict (CRD
    files): a target without a CRD falls back to the config (webhook.targets.offline_resources).
    Raises UnknownResource naming each target that has no resource."""
    out: dict[str, str] = {}
    problems: list[str] = []
    rest: list[Target] = []
    for t in targets:
        resource, why = served_as(t, served)
        if resource is None and not strict and not any(g == t.group for g, _ in served):
            rest.append(t)
        elif resource is None:
            problems.append(f"{t.key}: {why}")
        elif t.plural and t.plural != resource:
            problems.append(f"{t.key}: plural {t.plural!r} is not what serves it: {resource}")
        else:
            out[t.key] = resource
    try:
        out.update(offline_resources(rest))
    except UnknownResource as exc:
        problems += exc.problems
    if problems:
        raise UnknownResource(problems)
    return out


TARGET_HOOKS = ("targets.validate.", "targets.mutate.")


def check_rules(hooks: Iterable[dict], targets: Iterable[Target], served: Served) -> list[str]:
    """What stops a registration: a target the cluster does not serve, and a rule of the
    targets' webhooks that names a resource serving no target (it would match nothing, or
    another kind). One line each, starting with what it is about (`Kind.group: ...`,
    `group/resource: ...`); [] when every rule matches what it stands for."""
    targets = list(targets)
    try:
        resources = resolve(targets, served)
    except UnknownResource as exc:
        return exc.problems
    expected = {(t.group, resources[t.key]) for t in targets}
    problems = []
    for hook in hooks:
        if not str(hook.get("name", "")).startswith(TARGET_HOOKS):
            continue
        for rule in hook.get("rules") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    if (group, resource) not in expected:
                        problems.append(f"{group}/{resource}: a rule of {hook['name']} names it, and it serves no "
                                        f"configured target ({_names(expected, group)})")
    return problems


def _names(expected: set, group: str) -> str:
    names = sorted(r for g, r in expected if g == group)
    return f"{group} serves them as {', '.join(names)}" if names else f"no target is in {group}"


def resources_from(targets: Iterable[Target], crds: Iterable = (), kubeconfig: str | None = None) -> Mapping[str, str]:
    """The resources a registration names (`webhook-configs`, `vap`): by the discovery of the
    cluster of `kubeconfig`, else from the CRDs given (manifests.Document or dicts; a target
    without one: the config), else from the config alone. Raises UnknownResource."""
    targets = list(targets)
    if kubeconfig and targets:
        from webhook.cluster.cache import api_client
        api = api_client("kubeconfig", kubeconfig)
        try:
            return resolve(targets, from_cluster(api, [t.group for t in targets]))
        finally:
            api.close()
    docs = [getattr(d, "obj", d) for d in crds]
    return resolve(targets, from_crds(docs), strict=False) if docs else offline_resources(targets)
