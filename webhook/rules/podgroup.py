"""PodGroup (PG-1, PG-2): its blocks and identity, claim statuses, agreement with
its Workload template, and the shared claims no label-joined Pod can reach."""
from __future__ import annotations

from webhook import formats
from webhook.blocks import claims, disruption, policy
from webhook.blocks.common import same
from webhook.view import ClusterUnavailable, ClusterView
from webhook.config import Config
from webhook.field import FieldError, FieldWarning, Path, by_rule, duplicate, invalid, mirrors, too_many, warning
from webhook.verdict import Verdict
from webhook.schemas import structural_errors
from webhook.rules.core import (SPEC, TAS, block_errors, block_update_errors, condition_errors, identity_update_errors, object_spec,
                                parent_errors, workload_ref_errors)
from webhook.rules.workload import find_template


def validate_podgroup(obj: dict, old: dict | None, cfg: Config, view: ClusterView | None) -> Verdict:
    found = Verdict()
    judged = object_spec(obj, old, "podgroup", found)
    if judged is None:
        return found
    spec, old_spec = judged
    tagged = len(found.errors)      # what follows is PG-1's, where no block or gate rule found it
    found.errors += parent_errors(spec, old_spec, cfg, gated=True)
    if old_spec is None:
        found.errors += workload_ref_errors(spec, required_ref=False)
    found.errors += block_errors(spec, old_spec, SPEC, cfg, leaf=True)
    if old_spec is not None:
        found.errors += identity_update_errors(spec, old_spec)
        # schedulingConstraints is `+k8s:ifEnabled(TAS)=+k8s:immutable` on PodGroup.
        found.errors += block_update_errors(spec, old_spec, SPEC, leaf=True, constraints_frozen=cfg.gate(TAS))
    found.errors += _claim_statuses(obj, spec) + condition_errors(obj)
    found.errors[tagged:] = mirrors(found.errors[tagged:], "PG-1")
    if old is None:
        found.warnings += _unreachable_claims(obj, spec, cfg)
    if old is None and cfg.checkPodGroupAgainstWorkload and view is not None and not found.errors:
        before = len(found.errors)
        _against_workload(obj, spec, view, found)
        found.errors[before:] = by_rule(found.errors[before:], "PG-2")
    return found


def _unreachable_claims(obj: dict, spec: dict, cfg: Config) -> list[FieldWarning]:
    """Shared claims no label-joined Pod can reach: a Pod names its group by the label
    (`pods.groupLabel`), and a label value is at most 63 characters of a narrower
    alphabet than a PodGroup name. Only Pods that set spec.schedulingGroup themselves
    (a controller) then get the claims; the claim otherwise stays unallocated, silently."""
    name = (obj.get("metadata") or {}).get("name")
    if not spec.get("resourceClaims") or not isinstance(name, str) or formats.label_value(name) is None:
        return []
    return [warning(Path("metadata", "name"), f"{name[:80]!r} cannot be a value of the {cfg.groupLabel} label "
                    f"({formats.label_value(name)}): Pods that only carry the label cannot join this PodGroup or "
                    "get its claims; only Pods whose spec.schedulingGroup names it do")]


def _claim_statuses(obj: dict, spec: dict) -> list[FieldError]:
    statuses = (obj.get("status") or {}).get("resourceClaimStatuses") or []
    spath = Path("status", "resourceClaimStatuses")
    if len(statuses) > claims.MAX_CLAIMS:
        return [too_many(spath, len(statuses), claims.MAX_CLAIMS)]
    names = {c.get("name") for c in spec.get("resourceClaims") or []}
    errors: list[FieldError] = []
    seen: set = set()
    for i, status in enumerate(statuses):
        ipath, name = spath.index(i), status.get("name")
        if name in seen:
            errors.append(duplicate(ipath, {"name": name}))
        seen.add(name)
        if name not in names:
            errors.append(invalid(ipath.child("name"), name or "", "must match the name of an entry in `spec.resourceClaims`"))
        claim = status.get("resourceClaimName")
        if claim and (problem := formats.dns_subdomain(claim)):
            errors.append(invalid(ipath.child("resourceClaimName"), claim, problem))
    return errors


def _against_workload(obj: dict, spec: dict, view: ClusterView, found: Verdict) -> None:
    """PG-2 (policy): a PodGroup made from a template must agree with it."""
    ref = spec.get("workloadRef")
    if not ref:
        return
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    wl_name, tmpl_name = ref["workloadName"], ref["templateName"]
    try:
        workload = view.workload(namespace, wl_name)
    except ClusterUnavailable as exc:
        found.warnings.append(warning(SPEC.child("workloadRef"), f"not checked against Workload {wl_name!r}: {exc}"))
        return
    if workload is None:
        if view.authoritative:
            found.warnings.append(warning(SPEC.child("workloadRef", "workloadName"),
                                          f"Workload {wl_name!r} not found; not checked"))
        return
    if not isinstance(workload, dict) or structural_errors("workload", workload, limit=1):
        found.warnings.append(warning(SPEC.child("workloadRef", "workloadName"),
                                      f"Workload {wl_name!r} is malformed; not checked"))
        return
    template = find_template(workload, tmpl_name)
    if template is None:
        found.errors.append(invalid(SPEC.child("workloadRef", "templateName"), tmpl_name,
                                    f"Workload {wl_name!r} has no podGroupTemplate named {tmpl_name!r}"))
        return
    where = f"podGroupTemplate {tmpl_name!r} of Workload {wl_name!r}"
    pg_kind = policy.kind_of(spec.get("schedulingPolicy"))
    tm_kind = policy.kind_of(template.get("schedulingPolicy"))
    if pg_kind != tm_kind:
        found.errors.append(invalid(SPEC.child("schedulingPolicy"), pg_kind or "",
                                    f"must be a {tm_kind} policy like {where}"))
    for key in ("schedulingConstraints", "resourceClaims"):
        if not same(spec.get(key), template.get(key)):
            found.errors.append(invalid(SPEC.child(key), spec.get(key), f"must equal {key} of {where}"))
    if disruption.resolved_kind(spec.get("disruptionMode")) != disruption.resolved_kind(template.get("disruptionMode")):
        found.errors.append(invalid(SPEC.child("disruptionMode"), spec.get("disruptionMode"),
                                    f"must equal disruptionMode of {where} "
                                    f"({disruption.resolved_kind(template.get('disruptionMode'))})"))
