"""Workload, PodGroup and CompositePodGroup: a mirror of kube-apiserver 1.37
(declarative validation + pkg/apis/scheduling/validation) plus this service's
policies (DIS-2, PG-2). Rules WL-1, WL-2, PG-1, PG-2."""
from __future__ import annotations

from typing import Any

from webhook import formats
from webhook.blocks import claims, composite, constraints, disruption, policy, priority
from webhook.blocks.common import CORE, check_immutable, same
from webhook.cluster.view import ClusterUnavailable, ClusterView
from webhook.config import Config
from webhook.errors import FieldError, Path, Verdict, by_rule, duplicate, forbidden, invalid, required, too_many
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
    found.warnings.append("oldObject: malformed; judged without the update rules")
    return None


def _object(obj: dict, old: dict | None, schema: str, found: Verdict) -> tuple[dict, dict | None] | None:
    """What every core object goes through first: its shape, its name, a spec.
    Returns (spec, old spec or None on create), or None when judging stops here."""
    shape = structural_errors(schema, obj)
    if shape:
        found.errors = shape
        return None
    old = _usable_old(schema, old, found)
    found.errors += _metadata_name(obj)
    spec = obj.get("spec")
    if spec is None:
        found.errors.append(required(SPEC))
        return None
    return spec, (((old or {}).get("spec") or {}) if old is not None else None)


def _gate_forbidden(spec: dict, key: str, path: Path, gate: str, cfg: Config) -> list[FieldError]:
    if spec.get(key) not in (None, []) and not cfg.gate(gate):
        return [forbidden(path.child(key), f"disabled by feature-gate {gate}")]
    return []


def _changed(new: dict, old: dict | None, key: str) -> bool:
    """DV ratcheting: on update, a value equal to the stored one is not re-validated."""
    return old is None or not same(new.get(key), old.get(key))


def _metadata_name(obj: dict) -> list[FieldError]:
    """Object names are DNS subdomains; a namespace, when the manifest names one, a DNS label.
    (A manifest without a namespace is fine: the API server fills it in.)"""
    meta = obj.get("metadata") or {}
    errors = _name(meta.get("name"), Path("metadata", "name"), formats.dns_subdomain)
    if meta.get("namespace"):
        errors += _name(meta["namespace"], Path("metadata", "namespace"), formats.dns_label)
    return errors


def _name(value: Any, path: Path, check) -> list[FieldError]:
    if not value:
        return [required(path)]
    problem = check(value)
    return [invalid(path, value, problem)] if problem else []


def _blocks(spec: dict, old: dict | None, path: Path, cfg: Config, leaf: bool) -> list[FieldError]:
    """The building blocks shared by templates and objects, judged as upstream does.
    On update an immutable field is only checked for change: DV's `+k8s:immutable`
    short-circuits the field's other rules, and unchanged values are not re-judged."""
    errors: list[FieldError] = []
    creating = old is None
    pol_mod = policy if leaf else composite
    if _changed(spec, old, "schedulingPolicy"):
        if leaf:
            errors += policy.validate(spec.get("schedulingPolicy"), path.child("schedulingPolicy"), CORE, cfg.maxMinCount)
        else:
            errors += composite.validate(spec.get("schedulingPolicy"), path.child("schedulingPolicy"), CORE)
    if _changed(spec, old, "schedulingConstraints"):
        if leaf:
            errors += _gate_forbidden(spec, "schedulingConstraints", path, TAS, cfg)
        if creating:
            errors += constraints.validate(spec.get("schedulingConstraints"), path.child("schedulingConstraints"),
                                           cfg.allowedTopologyKeys)
    if leaf and _changed(spec, old, "resourceClaims"):
        errors += _gate_forbidden(spec, "resourceClaims", path, DRA, cfg)
        if creating:
            errors += claims.validate(spec.get("resourceClaims"), path.child("resourceClaims"))
    if creating:
        errors += disruption.validate(spec.get("disruptionMode"), path.child("disruptionMode"))
        errors += priority.validate(spec, path)
    if _changed(spec, old, "preemptionPolicy"):
        errors += _gate_forbidden(spec, "preemptionPolicy", path, PREEMPTION, cfg)
    if cfg.forbidAllWithBasic and (_changed(spec, old, "disruptionMode") or _changed(spec, old, "schedulingPolicy")):
        errors += disruption.validate_against_policy(spec.get("disruptionMode"), path.child("disruptionMode"),
                                                     pol_mod.kind_of(spec.get("schedulingPolicy")),
                                                     path.child("schedulingPolicy"))
    return errors


def _blocks_update(new: dict, old: dict, path: Path, leaf: bool, constraints_frozen: bool = True,
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


# ---------------------------------------------------------------- Workload

class _TreeWalk:
    """One pass over a Workload's template tree (WL-1)."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.errors: list[FieldError] = []
        self.names: dict[str, Path] = {}          # tree-wide unique names -> the list they were seen in
        self.beyond = False                       # below the maximum depth: declarative rules only

    def lists(self, spec: dict, old: dict | None, path: Path, depth: int, top: Path | None) -> None:
        """A level: its leaf templates first, then its composites (upstream order)."""
        self.template_list(spec, old, "podGroupTemplates", path, leaf=True, depth=depth, top=top)
        self.template_list(spec, old, "compositePodGroupTemplates", path, leaf=False, depth=depth, top=top)

    def template_list(self, spec: dict, old: dict | None, key: str, path: Path, leaf: bool, depth: int,
                      top: Path | None) -> None:
        items = spec.get(key) or []
        lpath = path.child(key)
        old_items = {t.get("name"): t for t in (old or {}).get(key) or []} if old is not None else None
        if old_items is not None:
            new_names = {t.get("name") for t in items}
            for i, t in enumerate(items):
                if t.get("name") not in old_items:
                    self.errors.append(forbidden(lpath.index(i), "item may not be added"))
            if any(n not in new_names for n in old_items):
                self.errors.append(forbidden(lpath, "item may not be removed"))
        if len(items) > MAX_TEMPLATES:
            self.errors.append(too_many(lpath, len(items), MAX_TEMPLATES))
            return  # bounded work on hostile input
        in_list: set[str] = set()
        for i, t in enumerate(items):
            tpath = lpath.index(i)
            name = t.get("name")
            self.errors += _name(name, tpath.child("name"), formats.dns_label)
            if name:
                if name in in_list:
                    self.errors.append(duplicate(tpath, {"name": name}))
                elif self.beyond:
                    pass    # below the maximum depth only declarative (per-field) rules run
                elif name in self.names:
                    self.errors.append(duplicate(tpath.child("name"), name))
                else:
                    self.names[name] = lpath
                in_list.add(name)
            old_t = old_items.get(name) if old_items is not None else None
            self.errors += _blocks(t, old_t, tpath, self.cfg, leaf)
            if old_t is not None:
                self.errors += _blocks_update(t, old_t, tpath, leaf)
            if not leaf:
                self.composite(t, old_t, tpath, depth, top or tpath)

    def composite(self, t: dict, old_t: dict | None, tpath: Path, depth: int, top: Path) -> None:
        if not self.beyond:
            children = len(t.get("podGroupTemplates") or []) + len(t.get("compositePodGroupTemplates") or [])
            self.errors += composite.validate_children(children, tpath, t.get("name"))
        own_depth = depth + 1  # a top-level composite is at depth 1; leaves may sit at depth 4
        if t.get("compositePodGroupTemplates") and own_depth + 1 >= MAX_DEPTH and not self.beyond:
            # Reported once, at the top-level composite, as the hand-written validator
            # does and stops; declarative validation still judges every deeper
            # template's own fields (kube-apiserver reports both), so the walk goes on
            # with the hand-written tree rules off. MAX_TEMPLATES bounds each level.
            self.errors.append(invalid(top, (t.get("name") or ""), f"maximum template hierarchy depth is {MAX_DEPTH}"))
            self.beyond = True
            try:
                self.lists(t, old_t, tpath, depth + 1, top)
            finally:
                self.beyond = False
            return
        if depth + 1 > MAX_DEPTH * 8:
            return  # hostile nesting: bounded work (the depth error is already reported)
        self.lists(t, old_t, tpath, depth + 1, top)


def validate_workload(obj: dict, old: dict | None, cfg: Config) -> Verdict:
    found = Verdict()
    judged = _object(obj, old, "workload", found)
    if judged is None:
        return found
    spec, old_spec = judged
    ref = spec.get("controllerRef")
    if ref is not None and _changed(spec, old_spec, "controllerRef"):
        rpath = SPEC.child("controllerRef")
        if ref.get("apiGroup") and (problem := formats.dns_subdomain(ref["apiGroup"])):
            found.errors.append(invalid(rpath.child("apiGroup"), ref["apiGroup"], problem))
        found.errors += _name(ref.get("kind"), rpath.child("kind"), formats.path_segment_name)
        found.errors += _name(ref.get("name"), rpath.child("name"), formats.path_segment_name)
    if old_spec is not None:
        found.errors += check_immutable(spec.get("controllerRef"), old_spec.get("controllerRef"),
                                        SPEC.child("controllerRef"))

    # WL-1/WL-2: exactly one of the lists; the union names only members whose gate is on.
    members = ("podGroupTemplates", "compositePodGroupTemplates") if cfg.gate(CPG) else ("podGroupTemplates",)
    gated_off = _gate_forbidden(spec, "compositePodGroupTemplates", SPEC, CPG, cfg) \
        if _changed(spec, old_spec, "compositePodGroupTemplates") else []
    found.errors += gated_off
    present = [m for m in members if spec.get(m)]
    names = ", ".join(f"`{m}`" for m in members)
    if not present and not gated_off:
        found.errors.append(invalid(SPEC, "", f"must specify one of: {names}"))
    elif len(present) > 1:
        found.errors.append(invalid(SPEC, "{" + ", ".join(present) + "}", f"must specify exactly one of: {names}"))

    walk = _TreeWalk(cfg)
    if len(_priority_configurations(spec)) > 1:
        found.errors.append(invalid(SPEC, "", "all priority and priorityClassName values must be identical, "
                                              "detected multiple priority configurations"))
    if cfg.gate(CPG):
        walk.lists(spec, old_spec, SPEC, depth=0, top=None)
    else:  # a gated-off tree is not judged beyond its Forbidden
        walk.template_list(spec, old_spec, "podGroupTemplates", SPEC, leaf=True, depth=0, top=None)
    found.errors += walk.errors
    return found


def _all_templates(spec: dict):
    """Every template of the tree, leaf and composite, at any depth (bounded, iterative)."""
    stack, seen = [spec], 0
    while stack and seen < 10_000:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        for key in ("podGroupTemplates", "compositePodGroupTemplates"):
            for t in node.get(key) or []:
                seen += 1
                yield key == "podGroupTemplates", t
                if key == "compositePodGroupTemplates":
                    stack.append(t)


def _priority_configurations(spec: dict) -> set:
    """WL-1: one priority configuration for the whole tree (checked whatever the gates)."""
    return {priority.configuration(t) for _, t in _all_templates(spec)}


def find_template(workload: dict, name: str) -> dict | None:
    """The PodGroupTemplate called `name` anywhere in a (valid) Workload's tree."""
    for leaf, t in _all_templates(workload.get("spec") or {}):
        if leaf and isinstance(t, dict) and t.get("name") == name:
            return t
    return None


# ---------------------------------------------------------------- PodGroup

def _workload_ref(spec: dict, required_ref: bool) -> list[FieldError]:
    ref, rpath = spec.get("workloadRef"), SPEC.child("workloadRef")
    if ref is None:
        return [required(rpath)] if required_ref else []
    return (_name(ref.get("workloadName"), rpath.child("workloadName"), formats.dns_subdomain)
            + _name(ref.get("templateName"), rpath.child("templateName"), formats.dns_label))


def _parent(spec: dict, old_spec: dict | None, cfg: Config, gated: bool) -> list[FieldError]:
    name = spec.get("parentCompositePodGroupName")
    if name is None or not _changed(spec, old_spec, "parentCompositePodGroupName"):
        return []
    if gated and not cfg.gate(CPG):
        return [forbidden(SPEC.child("parentCompositePodGroupName"), f"disabled by feature-gate {CPG}")]
    if old_spec is not None:
        return []  # immutable: the update rule reports it
    errors = _name(name, SPEC.child("parentCompositePodGroupName"), formats.dns_subdomain)
    if spec.get("workloadRef") is None:
        errors.append(required(SPEC.child("workloadRef"), "must be set when `parentCompositePodGroupName` is set"))
    return errors


def _identity_update(spec: dict, old_spec: dict) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("parentCompositePodGroupName", "workloadRef"):
        errors += check_immutable(spec.get(key), old_spec.get(key), SPEC.child(key))
    return errors


def validate_podgroup(obj: dict, old: dict | None, cfg: Config, view: ClusterView | None) -> Verdict:
    found = Verdict()
    judged = _object(obj, old, "podgroup", found)
    if judged is None:
        return found
    spec, old_spec = judged
    found.errors += _parent(spec, old_spec, cfg, gated=True)
    if old_spec is None:
        found.errors += _workload_ref(spec, required_ref=False)
    found.errors += _blocks(spec, old_spec, SPEC, cfg, leaf=True)
    if old_spec is not None:
        found.errors += _identity_update(spec, old_spec)
        # schedulingConstraints is `+k8s:ifEnabled(TAS)=+k8s:immutable` on PodGroup.
        found.errors += _blocks_update(spec, old_spec, SPEC, leaf=True, constraints_frozen=cfg.gate(TAS))
    found.errors += _claim_statuses(obj, spec) + _conditions(obj)
    if old is None and cfg.checkPodGroupAgainstWorkload and view is not None and not found.errors:
        before = len(found.errors)
        _against_workload(obj, spec, view, found)
        found.errors[before:] = by_rule(found.errors[before:], "PG-2")
    return found


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
        found.warnings.append(f"spec.workloadRef: not checked against Workload {wl_name!r}: {exc}")
        return
    if workload is None:
        if view.authoritative:
            found.warnings.append(f"spec.workloadRef.workloadName: Workload {wl_name!r} not found; not checked")
        return
    if not isinstance(workload, dict) or structural_errors("workload", workload, limit=1):
        found.warnings.append(f"spec.workloadRef.workloadName: Workload {wl_name!r} is malformed; not checked")
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


# ---------------------------------------------------------------- CompositePodGroup

def validate_composite_podgroup(obj: dict, old: dict | None, cfg: Config) -> Verdict:
    found = Verdict()
    judged = _object(obj, old, "compositepodgroup", found)
    if judged is None:
        return found
    spec, old_spec = judged
    found.errors += _parent(spec, old_spec, cfg, gated=False)
    if old_spec is None or spec.get("workloadRef") is None:
        found.errors += _workload_ref(spec, required_ref=True)
    found.errors += _blocks(spec, old_spec, SPEC, cfg, leaf=False)
    if old_spec is not None:
        found.errors += _identity_update(spec, old_spec)
        found.errors += _blocks_update(spec, old_spec, SPEC, leaf=False, whole_policy_frozen=True)
    found.errors += _conditions(obj)
    return found


def _conditions(obj: dict) -> list[FieldError]:
    cpath = Path("status", "conditions")
    return [invalid(cpath.index(i).child("observedGeneration"), c["observedGeneration"],
                    "must be greater than or equal to 0")
            for i, c in enumerate((obj.get("status") or {}).get("conditions") or [])
            if (c.get("observedGeneration") or 0) < 0]
