"""Resolving an item's config (defaults, the user's blocks, callbacks) and compiling
the tree into a Workload spec, with upstream's semantics (Go: mapconfig.go and the
compile half of builder.go). The templates come out as Go's encoder writes them
(`schedulingConstraints: null` on a leaf template without constraints, included)."""
from __future__ import annotations

from typing import Any

from webhook.builder.types import (BuildError, DisruptionMode, GangSchedulingPolicy, ResourceClaim,
                                   SchedulingConfig, SchedulingPolicy, WorkloadInput, WorkloadItem)


def _set(block: Any, member: str) -> bool:
    """A member of a union block is set when present and not null (a nil pointer in Go)."""
    return isinstance(block, dict) and block.get(member) is not None


def _map_policy(block: Any, count_key: str) -> SchedulingPolicy | None:
    """Basic wins over gang; an empty policy is None (falls back to the default)."""
    if _set(block, "basic"):
        return SchedulingPolicy(basic=True)
    if _set(block, "gang"):
        return SchedulingPolicy(gang=GangSchedulingPolicy(block["gang"].get(count_key)))
    return None


def _map_topology(block: Any) -> list[str] | None:
    topology = block.get("topology") if isinstance(block, dict) else None
    if not topology:
        return None
    return [(t.get("key") if isinstance(t, dict) else None) or "" for t in topology]


def _map_disruption(block: Any) -> DisruptionMode | None:
    """Single wins over all when both are set (the mapping's order, not the compiler's)."""
    if _set(block, "single"):
        return DisruptionMode(single=True)
    if _set(block, "all"):
        return DisruptionMode(all=True)
    return None


def _map_claims(claims: Any) -> list[ResourceClaim]:
    return [ResourceClaim(c.get("name") or "", c.get("resourceClaimName"), c.get("resourceClaimTemplateName"))
            for c in claims or ()]


def map_input(item: WorkloadItem) -> SchedulingConfig:
    """The user's blocks as a config, a field left None when its block is unset
    (Go: mapWorkloadInput, mapCompositeGroupInput)."""
    inp: WorkloadInput = item.input
    if item.composite:
        return SchedulingConfig(policy=_map_policy(inp.policy.composite_pod_group_data, "minGroupCount"),
                                constraints=_map_topology(inp.constraints.composite_pod_group_data),
                                disruption_mode=_map_disruption(inp.disruption_mode.composite_pod_group_data))
    return SchedulingConfig(policy=_map_policy(inp.policy.pod_group_data, "minCount"),
                            constraints=_map_topology(inp.constraints.pod_group_data),
                            disruption_mode=_map_disruption(inp.disruption_mode.pod_group_data),
                            resource_claims=_map_claims(inp.resource_claims.pod_group_data))


def resolve(item: WorkloadItem) -> SchedulingConfig:
    """The default config overlaid field by field with the user's, then the callbacks run
    on it in order (Go: resolveSchedulingConfig). The caller's configs are never mutated."""
    resolved = item.default_config.copy() if item.default_config is not None else SchedulingConfig()
    user = map_input(item)
    if user.policy is not None:
        resolved.policy = user.policy
    if user.constraints is not None:
        resolved.constraints = user.constraints
    if user.disruption_mode is not None:
        resolved.disruption_mode = user.disruption_mode
    if user.resource_claims:
        resolved.resource_claims = user.resource_claims
    for callback in item.callbacks:
        if callback is not None:
            callback(resolved)
    return resolved


def _input_union_error(item: WorkloadItem) -> str | None:
    inp = item.input
    if item.composite:
        for what, blk in (("policy", inp.policy), ("constraints", inp.constraints),
                          ("disruptionMode", inp.disruption_mode)):
            if blk.pod_group_data is not None:
                return f"composite workload item {_q(item.name)} sets leaf building block: {what}"
        if inp.resource_claims.pod_group_data:
            return f"composite workload item {_q(item.name)} sets leaf building block: resourceClaims"
        return None
    for what, blk in (("policy", inp.policy), ("constraints", inp.constraints), ("disruptionMode", inp.disruption_mode)):
        if blk.composite_pod_group_data is not None:
            return f"leaf workload item {_q(item.name)} sets composite building block: {what}"
    return None


def _q(s: str) -> str:
    """Go's %q of a string (printable ASCII names: a double-quoted, escaped string)."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= ord(ch) < 0x7f:
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def tree_error(root: WorkloadItem | None) -> str | None:
    """The first contract violation of the tree, in Go's words, pre-order: a missing item, an
    empty or repeated name (names are unique across the Workload), leaf/composite blocks mixed."""
    seen: set[str] = set()

    def walk(item: WorkloadItem | None) -> str | None:
        if item is None:
            return "workload item cannot be nil"
        if item.name == "":
            return "workload item name cannot be empty"
        if item.name in seen:
            return f"duplicate workload item name {_q(item.name)}: template names must be unique across the Workload"
        seen.add(item.name)
        problem = _input_union_error(item)
        if problem:
            return problem
        for child in item.children:
            problem = walk(child)
            if problem:
                return problem
        return None
    return walk(root)


def _policy(cfg: SchedulingConfig, composite: bool) -> dict:
    pol = cfg.policy
    if pol is not None and pol.gang is not None:
        if pol.gang.min_count is None:
            raise BuildError("composite gang scheduling requires minGroupCount to be set after resolution" if composite
                             else "gang scheduling requires minCount to be set after resolution")
        return {"gang": {"minGroupCount" if composite else "minCount": pol.gang.min_count}}
    return {"basic": {}}


def _mode(dm: DisruptionMode | None) -> dict | None:
    """All wins over single here (the compiler's order); neither set compiles to nothing."""
    if dm is None:
        return None
    if dm.all:
        return {"all": {}}
    if dm.single:
        return {"single": {}}
    return None


def _claim(c: ResourceClaim) -> dict:
    out: dict = {"name": c.name}
    if c.resource_claim_name is not None:
        out["resourceClaimName"] = c.resource_claim_name
    if c.resource_claim_template_name is not None:
        out["resourceClaimTemplateName"] = c.resource_claim_template_name
    return out


def _leaf_template(item: WorkloadItem) -> dict:
    cfg = resolve(item)
    tmpl: dict = {"name": item.name, "schedulingPolicy": _policy(cfg, False),
                  "schedulingConstraints": {"topology": [{"key": k} for k in cfg.constraints]}
                  if cfg.constraints else None}
    if cfg.resource_claims:
        tmpl["resourceClaims"] = [_claim(c) for c in cfg.resource_claims]
    mode = _mode(cfg.disruption_mode)
    if mode is not None:
        tmpl["disruptionMode"] = mode
    if cfg.priority_class_name:
        tmpl["priorityClassName"] = cfg.priority_class_name
    return tmpl


def _composite_template(item: WorkloadItem) -> dict:
    cfg = resolve(item)
    tmpl: dict = {"name": item.name, "schedulingPolicy": _policy(cfg, True)}
    if cfg.constraints:
        tmpl["schedulingConstraints"] = {"topology": [{"key": k} for k in cfg.constraints]}
    mode = _mode(cfg.disruption_mode)
    if mode is not None:
        tmpl["disruptionMode"] = mode
    if cfg.priority_class_name:
        tmpl["priorityClassName"] = cfg.priority_class_name
    leaves, composites = [], []
    for child in item.children:
        if child.composite:
            composites.append(_composite_template(child))
        else:
            leaves.append(_leaf_template(child))
    if leaves:
        tmpl["podGroupTemplates"] = leaves
    if composites:
        tmpl["compositePodGroupTemplates"] = composites
    return tmpl


def compile_spec(root: WorkloadItem | None) -> dict:
    """The Workload spec the tree compiles to, without the controllerRef: one
    CompositePodGroupTemplate for a composite root, one PodGroupTemplate for a leaf.
    Raises BuildError with Go's message on the first problem."""
    problem = tree_error(root)
    if problem:
        raise BuildError(problem)
    if root.composite:
        return {"podGroupTemplates": None, "compositePodGroupTemplates": [_composite_template(root)]}
    return {"podGroupTemplates": [_leaf_template(root)]}
