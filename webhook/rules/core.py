"""What every core scheduling.k8s.io object goes through (a mirror of
kube-apiserver 1.37: declarative validation + pkg/apis/scheduling/validation):
its shape, its name, its blocks and their update rules, the identity fields of
PodGroups and CompositePodGroups, status conditions. The kinds themselves:
workload.py (WL-1, WL-2), podgroup.py (PG-1, PG-2), composite_podgroup.py."""
from __future__ import annotations

from typing import Any

from webhook import formats
from webhook.blocks import claims, composite, constraints, disruption, policy, priority
from webhook.blocks.common import CORE, check_immutable, same
from webhook.config import Config
from webhook.field import FieldError, Path, found_by, gated_off, invalid, required, warning
from webhook.verdict import Verdict
from webhook.schemas import structural_errors

MAX_TEMPLATES = 8          # WorkloadMaxPodGroupTemplates
MAX_DEPTH = 4              # WorkloadMaxTreeDepth
TAS = "TopologyAwareWorkloadScheduling"
DRA = "DRAWorkloadResourceClaims"
CPG = "CompositePodGroup"
PREEMPTION = "PodGroupPreemptionPolicy"
SPEC = Path("spec")


def _usable_old(schema: str, old: dict | None, found: Verdict) -> dict | None:
    """The stored object, if it has the right shape. The API server never sends a
    malformed oldObject; if one comes anyway, judge as a create and say so."""
    if old is None or not structural_errors(schema, old, limit=1):
        return old
    found.warnings.append(warning(Path("oldObject"), "malformed; judged without the update rules"))
    return None


def object_spec(obj: dict, old: dict | None, schema: str, found: Verdict) -> tuple[dict, dict | None] | None:
    """What every core object goes through first: its shape, its name, a spec.
    Returns (spec, old spec or None on create), or None when judging stops here."""
    shape = structural_errors(schema, obj)
    if shape:
        found.errors = shape
        return None
    old = _usable_old(schema, old, found)
    found.errors += metadata_name_errors(obj)
    spec = obj.get("spec")
    if spec is None:
        found.errors.append(required(SPEC))
        return None
    return spec, (((old or {}).get("spec") or {}) if old is not None else None)


@found_by("WL-2")
def gate_forbidden(spec: dict, key: str, path: Path, gate: str, cfg: Config) -> list[FieldError]:
    if spec.get(key) not in (None, []) and not cfg.gate(gate):
        return [gated_off(path.child(key), gate)]
    return []


def changed(new: dict, old: dict | None, key: str) -> bool:
    """DV ratcheting: on update, a value equal to the stored one is not re-validated."""
    return old is None or not same(new.get(key), old.get(key))


def metadata_name_errors(obj: dict) -> list[FieldError]:
    """Object names are DNS subdomains; a namespace, when the manifest names one, a DNS label.
    (A manifest without a namespace is fine: the API server fills it in.)"""
    meta = obj.get("metadata") or {}
    errors = name_errors(meta.get("name"), Path("metadata", "name"), formats.dns_subdomain)
    if meta.get("namespace"):
        errors += name_errors(meta["namespace"], Path("metadata", "namespace"), formats.dns_label)
    return errors


def name_errors(value: Any, path: Path, check) -> list[FieldError]:
    if not value:
        return [required(path)]
    problem = check(value)
    return [invalid(path, value, problem)] if problem else []


def block_errors(spec: dict, old: dict | None, path: Path, cfg: Config, leaf: bool) -> list[FieldError]:
    """The building blocks shared by templates and objects, judged as upstream does.
    On update an immutable field is only checked for change: DV's `+k8s:immutable`
    short-circuits the field's other rules, and unchanged values are not re-judged."""
    errors: list[FieldError] = []
    creating = old is None
    pol_mod = policy if leaf else composite
    if changed(spec, old, "schedulingPolicy"):
        if leaf:
            errors += policy.validate(spec.get("schedulingPolicy"), path.child("schedulingPolicy"), CORE, cfg.maxMinCount,
                                      old=None if creating else old.get("schedulingPolicy"))
        else:
            errors += composite.validate(spec.get("schedulingPolicy"), path.child("schedulingPolicy"), CORE)
    if changed(spec, old, "schedulingConstraints"):
        if leaf:
            errors += gate_forbidden(spec, "schedulingConstraints", path, TAS, cfg)
        if creating:
            errors += constraints.validate(spec.get("schedulingConstraints"), path.child("schedulingConstraints"),
                                           cfg.allowedTopologyKeys)
    if leaf and changed(spec, old, "resourceClaims"):
        errors += gate_forbidden(spec, "resourceClaims", path, DRA, cfg)
        if creating:
            errors += claims.validate(spec.get("resourceClaims"), path.child("resourceClaims"))
    if creating:
        errors += disruption.validate(spec.get("disruptionMode"), path.child("disruptionMode"))
        errors += priority.validate(spec, path)
    if changed(spec, old, "preemptionPolicy"):
        errors += gate_forbidden(spec, "preemptionPolicy", path, PREEMPTION, cfg)
    if cfg.forbidAllWithBasic and (changed(spec, old, "disruptionMode") or changed(spec, old, "schedulingPolicy")):
        errors += disruption.validate_against_policy(spec.get("disruptionMode"), path.child("disruptionMode"),
                                                     pol_mod.kind_of(spec.get("schedulingPolicy")),
                                                     path.child("schedulingPolicy"))
    return errors


def block_update_errors(new: dict, old: dict, path: Path, leaf: bool, constraints_frozen: bool = True,
                   whole_policy_frozen: bool = False) -> list[FieldError]:
    errors: list[FieldError] = []
    ppath = path.child("schedulingPolicy")
    if whole_policy_frozen:
        errors += composite.validate_update(new.get("schedulingPolicy"), old.get("schedulingPolicy"), ppath)
    elif leaf:
        errors += policy.validate_update(new.get("schedulingPolicy"), old.get("schedulingPolicy"), ppath, CORE)
    else:
        errors += composite.validate_template_update(new.get("schedulingPolicy"), old.get("schedulingPolicy"), ppath)
    if constraints_frozen:
        errors += constraints.validate_update(new.get("schedulingConstraints"), old.get("schedulingConstraints"),
                                              path.child("schedulingConstraints"))
    if leaf:
        errors += claims.validate_update(new.get("resourceClaims"), old.get("resourceClaims"), path.child("resourceClaims"))
    errors += disruption.validate_update(new.get("disruptionMode"), old.get("disruptionMode"), path.child("disruptionMode"))
    errors += priority.validate_update(new, old, path)
    return errors


def workload_ref_errors(spec: dict, required_ref: bool) -> list[FieldError]:
    ref, rpath = spec.get("workloadRef"), SPEC.child("workloadRef")
    if ref is None:
        return [required(rpath)] if required_ref else []
    return (name_errors(ref.get("workloadName"), rpath.child("workloadName"), formats.dns_subdomain)
            + name_errors(ref.get("templateName"), rpath.child("templateName"), formats.dns_label))


def parent_errors(spec: dict, old_spec: dict | None, cfg: Config, gated: bool) -> list[FieldError]:
    name = spec.get("parentCompositePodGroupName")
    if name is None or not changed(spec, old_spec, "parentCompositePodGroupName"):
        return []
    if gated and not cfg.gate(CPG):
        return [gated_off(SPEC.child("parentCompositePodGroupName"), CPG)]
    if old_spec is not None:
        return []  # immutable: the update rule reports it
    errors = name_errors(name, SPEC.child("parentCompositePodGroupName"), formats.dns_subdomain)
    if spec.get("workloadRef") is None:
        errors.append(required(SPEC.child("workloadRef"), "must be set when `parentCompositePodGroupName` is set"))
    return errors


def identity_update_errors(spec: dict, old_spec: dict) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("parentCompositePodGroupName", "workloadRef"):
        errors += check_immutable(spec.get(key), old_spec.get(key), SPEC.child(key))
    return errors


def condition_errors(obj: dict) -> list[FieldError]:
    cpath = Path("status", "conditions")
    return [invalid(cpath.index(i).child("observedGeneration"), c["observedGeneration"],
                    "must be greater than or equal to 0")
            for i, c in enumerate((obj.get("status") or {}).get("conditions") or [])
            if (c.get("observedGeneration") or 0) < 0]
