"""Pods joining their pod group at CREATE (POD-1..8): `spec.schedulingGroup`,
the group label, the workload label and the group's shared DRA claims.

Only ever adds, as JSON Patch `add` operations built from the additions (no
copy and diff of the whole Pod): what the Pod already had is never removed,
reordered or rewritten, so mutating twice gives no second patch."""
from __future__ import annotations

from typing import Any

from webhook import formats
from webhook.blocks import claims
from webhook.cluster.view import ClusterUnavailable, ClusterView
from webhook.config import Config
from webhook.field import Path, by_rule, forbidden, invalid
from webhook.verdict import Verdict
from webhook.mutation import additions
from webhook.rules.pods import GROUP_NAME, membership, shape_errors
from webhook.schemas import structural_errors


def _want_label(labels: Any, wanted: dict, key: str, value: str, warnings: list[str], why: str) -> None:
    if (isinstance(labels, dict) and key in labels) or key in wanted:
        return
    if formats.label_value(value):
        warnings.append(f"metadata.labels[{key}]: not added: {value!r} is not a valid label value ({why})")
        return
    wanted[key] = value


def mutate_pod(pod: Any, namespace: str | None, cfg: Config, view: ClusterView) -> Verdict:
    """The Verdict's patch holds the JSON Patch adds (webhook.mutation.additions)."""
    out = Verdict()
    shape = shape_errors(pod, cfg)
    if shape:
        out.errors = shape
        return out
    name, out.errors = membership(pod, cfg)
    if out.errors or name is None:
        return out
    namespace = namespace or (pod.get("metadata") or {}).get("namespace") or "default"
    meta, spec = pod.get("metadata"), pod.get("spec")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    spec_now = spec if isinstance(spec, dict) else {}

    labels_wanted: dict[str, str] = {}
    spec_wanted: dict[str, Any] = {}
    if spec_now.get("schedulingGroup") is None:                                # POD-1
        spec_wanted["schedulingGroup"] = {"podGroupName": name}
    _want_label(labels, labels_wanted, cfg.groupLabel, name, out.warnings, "the PodGroup name")   # POD-2

    podgroup = _lookup(namespace, name, cfg, view, out)      # POD-5
    claims_wanted: list[dict] = []
    container_claims: dict[int, list[dict]] = {}
    if podgroup is not None and not out.errors:
        _inject_claims(spec_now, podgroup, name, cfg, out, claims_wanted, container_claims)    # POD-4
        workload = ((podgroup.get("spec") or {}).get("workloadRef") or {}).get("workloadName")
        if cfg.workloadLabel and isinstance(workload, str) and workload:   # POD-8
            _want_label(labels, labels_wanted, cfg.workloadLabel, workload, out.warnings, "the Workload name")
    if out.errors:
        # Denied unless the enforcement config relaxes POD-4/POD-5: then the Pod still joins
        # its group (membership and labels), without the claims.
        claims_wanted, container_claims = [], {}

    ops: list[dict] = []
    if labels_wanted:
        if isinstance(meta, dict):
            additions.add_members(ops, labels, ("metadata", "labels"), labels_wanted)
        else:
            additions.add_members(ops, meta, ("metadata",), {"labels": labels_wanted})
    if not isinstance(spec, dict) and claims_wanted:
        spec_wanted["resourceClaims"] = claims_wanted       # a missing spec gets everything in one add
    additions.add_members(ops, spec, ("spec",), spec_wanted)
    if isinstance(spec, dict):
        additions.append_items(ops, spec.get("resourceClaims"), ("spec", "resourceClaims"), claims_wanted)
        for i, missing in container_claims.items():
            resources = spec["containers"][i].get("resources")
            if isinstance(resources, dict):
                additions.append_items(ops, resources.get("claims"), ("spec", "containers", i, "resources", "claims"),
                                       missing)
            else:
                additions.add_members(ops, resources, ("spec", "containers", i, "resources"), {"claims": missing})
    out.patch = ops or None
    return out


def _lookup(namespace: str, name: str, cfg: Config, view: ClusterView, out: Verdict) -> dict | None:
    deny = cfg.onMissingPodGroup == "deny"
    try:
        podgroup = view.podgroup(namespace, name)
    except ClusterUnavailable as exc:
        if deny:
            out.errors += by_rule([forbidden(GROUP_NAME, f"PodGroup {name!r} could not be looked up ({exc}) "
                                                         "and pods.onMissingPodGroup is deny")], "POD-5")
        else:
            out.warnings.append(f"{GROUP_NAME}: PodGroup {name!r} not looked up ({exc}); claims not injected")
        return None
    if podgroup is None:
        if view.disabled and not deny:
            out.warnings.append(f"{GROUP_NAME}: no cluster view; claims of PodGroup {name!r} not injected")
        elif deny:
            out.errors += by_rule([invalid(GROUP_NAME, name, f"PodGroup {name!r} does not exist in namespace "
                                                             f"{namespace!r} (pods.onMissingPodGroup: deny)")], "POD-5")
        else:
            out.warnings.append(f"{GROUP_NAME}: PodGroup {name!r} not found yet; its claims were not injected")
        return None
    if not isinstance(podgroup, dict) or structural_errors("podgroup", podgroup, limit=1):
        out.warnings.append(f"{GROUP_NAME}: PodGroup {name!r} is malformed; its claims were not injected")
        return None
    if (podgroup.get("metadata") or {}).get("deletionTimestamp"):
        out.errors += by_rule([forbidden(GROUP_NAME, f"cannot create Pod referencing PodGroup {name!r} "
                                                     "because it is being deleted")], "POD-5")
        return None
    return podgroup


def _warn_own_devices(pod_claims: list, group_claims: list[dict], group: str, out: Verdict) -> None:
    """A Pod entry under another name that takes a group claim's template (or claim) gets a
    device of its own, silently: the scheduler never shares it. Said, not refused."""
    shared = {(k, gc[k]): gc["name"] for gc in group_claims for k in claims.REFS if gc.get(k)}
    names = {gc["name"] for gc in group_claims}
    for i, c in enumerate(pod_claims):
        if not isinstance(c, dict) or c.get("name") in names:
            continue
        for k in claims.REFS:
            gc = shared.get((k, c.get(k)))
            if gc is not None:
                what = "its own claim from template" if k == "resourceClaimTemplateName" else "the claim"
                out.warnings.append(f"spec.resourceClaims[{i}]: {c.get('name')!r} takes {what} {c[k]!r}, as claim "
                                    f"{gc!r} of PodGroup {group!r} does: "
                                    + ("this Pod gets a device of its own, not the group's shared one"
                                       if k == "resourceClaimTemplateName" else "two entries for one claim"))
                break


def _inject_claims(spec: dict, podgroup: dict, name: str, cfg: Config, out: Verdict,
                   claims_wanted: list[dict], container_claims: dict[int, list[dict]]) -> None:
    """The group's claims the Pod lacks (POD-4), into `claims_wanted` and, with
    claimsToContainers: all, each container's missing claim names."""
    # A claim without a name cannot be matched on the next call: skipped, so mutating twice adds nothing;
    # a name listed twice (the API server refuses that, a stale cache may not) counts once.
    group_claims: list[dict] = []
    for c in (podgroup.get("spec") or {}).get("resourceClaims") or []:
        if isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"] \
                and all(g["name"] != c["name"] for g in group_claims):
            group_claims.append(c)
    if not group_claims:
        return
    pod_claims = spec.get("resourceClaims") or []
    by_name = {c.get("name"): i for i, c in enumerate(pod_claims)}
    added = []
    for gc in group_claims:
        i = by_name.get(gc["name"])
        if i is None:
            added.append({k: gc[k] for k in ("name", *claims.REFS) if gc.get(k)})
        elif claims.reference(pod_claims[i]) != claims.reference(gc):
            ref = next((f"{k}: {gc[k]}" for k in claims.REFS if gc.get(k)), "no reference")
            out.errors += by_rule([invalid(Path("spec", "resourceClaims", i), pod_claims[i],
                                           f"conflicts with claim {gc['name']!r} of PodGroup {name!r} ({ref}); "
                                           "the Pod would not share the group's claim")], "POD-4")
    if out.errors:
        return
    _warn_own_devices(pod_claims, group_claims, name, out)
    claims_wanted.extend(added)
    if cfg.claimsToContainers == "all":
        for i, container in enumerate(spec.get("containers") or []):
            resources = container.get("resources") or {}
            have = {c.get("name") for c in resources.get("claims") or []}
            missing = [{"name": gc["name"]} for gc in group_claims if gc["name"] not in have]
            if missing:
                container_claims[i] = missing
