"""Pods joining their pod group at CREATE (POD-1..8): `spec.schedulingGroup`,
the group label, the workload label and the group's shared DRA claims.

Only ever adds, as JSON Patch `add` operations built from the additions (no
copy and diff of the whole Pod): what the Pod already had is never removed,
reordered or rewritten, so mutating twice gives no second patch."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from webhook import formats
from webhook.blocks import claims
from webhook.foreign import pods as foreign_pods
from webhook.view import ClusterView
from webhook.config import Config
from webhook.field import FieldError, FieldWarning, Path, by_rule, invalid, warning
from webhook.verdict import Verdict
from webhook.mutation import additions, foreign_join, lookup
from webhook.rules import gang_members
from webhook.rules.pods import membership, shape_errors


class Join(NamedTuple):
    """What joining its group adds to a Pod (POD-1, 2, 4, 8), as a value: the
    patch is built from it (`patch`), and mutating twice plans nothing."""
    group: str
    scheduling_group: bool = False                       # set spec.schedulingGroup (POD-1)
    labels: tuple[tuple[str, str], ...] = ()             # labels to add (POD-2, POD-8)
    claims: tuple[dict, ...] = ()                        # spec.resourceClaims entries to add (POD-4)
    container_claims: tuple[tuple[int, tuple[str, ...]], ...] = ()   # container index -> claim names to add
    warnings: tuple[FieldWarning, ...] = ()
    errors: tuple[FieldError, ...] = ()
    outcome: lookup.Outcome = lookup.FOUND                # what the lookup of the group found (POD-5)


def mutate_pod(pod: Any, namespace: str | None, cfg: Config, view: ClusterView) -> Verdict:
    """The Verdict's patch holds the JSON Patch adds of the Pod's Join."""
    shape = shape_errors(pod, cfg)
    if shape:
        return Verdict(errors=shape)
    name, errors = membership(pod, cfg)
    handoff = foreign_pods.handoff(pod, cfg.bridge)                                              # BRG-4
    if errors or name is None:
        return Verdict(errors=errors, patch=handoff or None)
    namespace = namespace or (pod.get("metadata") or {}).get("namespace") or "default"
    join = foreign_join.plan_join(pod, name, namespace, cfg, view, plan_join) if cfg.bridge.dialects \
        else plan_join(pod, name, namespace, cfg, view)
    return Verdict(errors=list(join.errors), warnings=list(join.warnings), patch=(patch(pod, join) + handoff) or None)


def plan_join(pod: dict, name: str, namespace: str, cfg: Config, view: ClusterView,
              found: lookup.Found | None = None, said: Callable[..., lookup.Said] = lookup.said) -> Join:
    """The Join of a Pod that names group `name` (membership passed). `found`: the group's
    lookup when the caller made it (the bridge, which waits for a mirror); `said`: the words
    for its outcome (the bridge says a missing mirror as BRG-2)."""
    meta, spec = pod.get("metadata"), pod.get("spec")
    have = meta.get("labels") if isinstance(meta, dict) else None
    have = have if isinstance(have, dict) else {}
    spec = spec if isinstance(spec, dict) else {}
    wanted = [(cfg.groupLabel, name, "the PodGroup name")]                                    # POD-2
    if found is None:
        found = lookup.find(view, namespace, name)                                              # POD-5
    found_errors, found_warnings = ((), ()) if found.outcome is lookup.FOUND else \
        said(found, name, namespace, cfg.onMissingPodGroup == "deny")
    warnings = list(found_warnings)
    errors, claims_added, containers = list(found_errors), (), ()
    if found.podgroup is not None and not errors:
        offer = _claims(spec, found.podgroup, name, cfg)                                        # POD-4
        errors, warnings = [*errors, *offer.errors], [*warnings, *offer.warnings]
        claims_added, containers = offer.claims, offer.containers
        workload = ((found.podgroup.get("spec") or {}).get("workloadRef") or {}).get("workloadName")
        if cfg.workloadLabel and isinstance(workload, str) and workload:                      # POD-8
            wanted.append((cfg.workloadLabel, workload, "the Workload name"))
    if errors:
        # Denied unless the enforcement config relaxes POD-4/POD-5: then the Pod still joins
        # its group (membership and labels), without the claims.
        claims_added, containers = (), ()
    if found.podgroup is not None and not found_errors:
        # GANG-1..3 after the claims: relaxed by the enforcement config, the Pod joins with them.
        errors += gang_members.errors(pod, found.podgroup, name, namespace, cfg, view)
    labels, unfit = _labels(have, wanted)
    return Join(group=name, scheduling_group=spec.get("schedulingGroup") is None,                # POD-1
                labels=labels, claims=claims_added,
                container_claims=containers, warnings=(*unfit, *warnings), errors=tuple(errors),
                outcome=found.outcome)


def patch(pod: dict, join: Join) -> list[dict]:
    """The JSON Patch adds that make `pod` a member as `join` says."""
    adds = additions.Additions(pod)
    for key, value in join.labels:
        adds.member(("metadata", "labels"), key, value)
    if join.scheduling_group:
        adds.member(("spec",), "schedulingGroup", {"podGroupName": join.group})
    for claim in join.claims:
        adds.item(("spec", "resourceClaims"), claim)
    for i, names in join.container_claims:
        for claim_name in names:
            adds.item(("spec", "containers", i, "resources", "claims"), {"name": claim_name})
    return adds.ops


def _labels(have: dict, wanted: list[tuple[str, str, str]]) -> tuple[tuple[tuple[str, str], ...], list[FieldWarning]]:
    """The labels to add (each key once: the group and workload labels may be one key, and
    never one the Pod has), and a warning for each value that cannot be a label value."""
    out: dict[str, str] = {}
    unfit = []
    for key, value, why in wanted:
        if key in have or key in out:
            continue
        if formats.label_value(value):
            unfit.append(warning(Path("metadata", "labels").key(key),
                                 f"not added: {value!r} is not a valid label value ({why})"))
        else:
            out[key] = value
    return tuple(out.items()), unfit


class _Offer(NamedTuple):
    """The group's claims a Pod lacks, or why it cannot take them."""
    claims: tuple[dict, ...] = ()
    containers: tuple[tuple[int, tuple[str, ...]], ...] = ()
    errors: tuple[FieldError, ...] = ()
    warnings: tuple[FieldWarning, ...] = ()


def _own_devices(pod_claims: list, group_claims: list[dict], group: str) -> list[FieldWarning]:
    """A Pod entry under another name that takes a group claim's template (or claim) gets a
    device of its own, silently: the scheduler never shares it. Said, not refused."""
    shared = {(k, gc[k]): gc["name"] for gc in group_claims for k in claims.REFS if gc.get(k)}
    names = {gc["name"] for gc in group_claims}
    warnings = []
    for i, c in enumerate(pod_claims):
        if not isinstance(c, dict) or c.get("name") in names:
            continue
        for k in claims.REFS:
            gc = shared.get((k, c.get(k)))
            if gc is not None:
                what = "its own claim from template" if k == "resourceClaimTemplateName" else "the claim"
                warnings.append(warning(Path("spec", "resourceClaims", i),
                                        f"{c.get('name')!r} takes {what} {c[k]!r}, as claim "
                                        f"{gc!r} of PodGroup {group!r} does: "
                                        + ("this Pod gets a device of its own, not the group's shared one"
                                           if k == "resourceClaimTemplateName" else "two entries for one claim")))
                break
    return warnings


def _group_claims(podgroup: dict) -> list[dict]:
    """The group's claims that can be matched: a claim without a name cannot be found on the
    next call (skipped, so mutating twice adds nothing); a name listed twice (the API server
    refuses that, a stale cache may not) counts once."""
    out: list[dict] = []
    for c in (podgroup.get("spec") or {}).get("resourceClaims") or []:
        if isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"] \
                and all(g["name"] != c["name"] for g in out):
            out.append(c)
    return out


def _claims(spec: dict, podgroup: dict, name: str, cfg: Config) -> _Offer:
    """The group's claims the Pod lacks (POD-4) and, with claimsToContainers: all, each
    container's missing claim names; or the Pod entries that conflict with them."""
    group_claims = _group_claims(podgroup)
    if not group_claims:
        return _Offer()
    pod_claims = spec.get("resourceClaims") or []
    by_name = {c.get("name"): i for i, c in enumerate(pod_claims)}
    added, errors = [], []
    for gc in group_claims:
        i = by_name.get(gc["name"])
        if i is None:
            added.append({k: gc[k] for k in ("name", *claims.REFS) if gc.get(k)})
        elif claims.reference(pod_claims[i]) != claims.reference(gc):
            ref = next((f"{k}: {gc[k]}" for k in claims.REFS if gc.get(k)), "no reference")
            errors += by_rule([invalid(Path("spec", "resourceClaims", i), pod_claims[i],
                                       f"conflicts with claim {gc['name']!r} of PodGroup {name!r} ({ref}); "
                                       "the Pod would not share the group's claim")], "POD-4")
    if errors:
        return _Offer(errors=tuple(errors))
    containers = []
    if cfg.claimsToContainers == "all":
        for i, container in enumerate(spec.get("containers") or []):
            have = {c.get("name") for c in (container.get("resources") or {}).get("claims") or []}
            missing = tuple(gc["name"] for gc in group_claims if gc["name"] not in have)
            if missing:
                containers.append((i, missing))
    return _Offer(claims=tuple(added), containers=tuple(containers),
                  warnings=tuple(_own_devices(pod_claims, group_claims, name)))
