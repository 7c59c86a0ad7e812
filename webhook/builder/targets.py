"""From a target object to the objects an operator should create for it: its groups,
found where the configuration says they sit (webhook.targets: the leaf groups and the
composite of a configured target or profile, the same fan-out the engine judges), as
WorkloadItem trees; each tree built into a Workload with its CompositePodGroups and
PodGroups. A batch/v1 Job gets what the in-tree Job controller makes.

Naming follows the in-tree Job controller (webhook.builder.names): the Workload
`<object>-<hash of its uid>`, leaf templates `<object>-pgt-<i>`, the composite
template `<object>-cpgt-0`, each (Composite)PodGroup `<workload>-<template>-<hash>`.
Groups whose blocks are all unset are not groups (as the engine counts them), except
under a composite, whose every child is one. Several
leaf groups and no composite: one Workload per group, `<object>-<i>-<hash>`.
An unset gang minCount defaults to the group's size when known (at least 1), as the
operators' controllers compute it; an object without a uid (a file) gets a stand-in
derived from its identity, the server's real one replacing it on create."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from webhook.builder.builder import Builder, controller_ref
from webhook.builder.names import pod_group_name, template_name, workload_name
from webhook.builder.types import (ALL_MODES, ALL_POLICIES, BuildOptions, SchedulingConfig,
                                   SchedulingPolicy, GangSchedulingPolicy, WorkloadInput, WorkloadItem, BlockInput)
from webhook.config import Config
from webhook.field import FieldError, Path
from webhook.rules import size as sizes
from webhook.rules.crd import composite_instance

_LEAF_KEYS = ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "resourceClaims")


@dataclass
class Rendered:
    objects: list[dict] = field(default_factory=list)
    note: str | None = None        # why nothing was rendered


def owner_of(obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    uid = meta.get("uid") or str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(
        str(x) for x in (obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"), meta.get("name")))))
    return controller_ref({"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": meta.get("name"),
                           "uid": uid})


def _min_count_default(size: int | None):
    def default(cfg: SchedulingConfig) -> None:
        if cfg.policy is not None and cfg.policy.gang is not None and cfg.policy.gang.min_count is None:
            cfg.policy.gang.min_count = max(1, size if size is not None else 1)
    return default


def _unset_nonpositive(block):
    gang = block.get("gang") if isinstance(block, dict) else None
    if isinstance(gang, dict) and isinstance(gang.get("minCount"), int) and gang["minCount"] <= 0:
        return {**block, "gang": {k: v for k, v in gang.items() if k != "minCount"}}
    return block


def _default_policy(kind: str) -> SchedulingPolicy:
    return SchedulingPolicy(gang=GangSchedulingPolicy()) if kind == "gang" else SchedulingPolicy(basic=True)


def _instances(obj: dict, group):
    """Each instance of a leaf group (the engine's fan-out, webhook.paths, without its checks:
    the engine has judged the object): {block key: (path, value)} and the group's size."""
    paths = {k: p for k, p in group.paths().items() if k in _LEAF_KEYS}
    deepest = max(paths.values(), key=lambda p: p.wildcards)
    size = group.size
    for idx in deepest.bindings(obj)[0]:
        blocks = {}
        for k, p in paths.items():
            at = p.concrete(idx)
            blocks[k] = (at, _at(obj, at))
        if size is None:
            n = None
        elif size.path is not None:
            raw = _at(obj, size.path.concrete(idx))
            n = size.default if raw is None else raw if isinstance(raw, int) else None
        else:
            n = sizes.evaluate(obj, size, idx)[0]
        yield blocks, n


def _at(obj, path):
    """The value at a concrete path, None where it is missing (or of another JSON type)."""
    node = obj
    for seg in path:
        if isinstance(seg, int):
            node = node[seg] if isinstance(node, list) and 0 <= seg < len(node) else None
        else:
            node = node.get(seg) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def _leaf_items(obj: dict, target, name: str) -> list[WorkloadItem]:
    """One leaf per group instance whose blocks are set; under a composite, one per child, set or not."""
    items: list[WorkloadItem] = []
    for group in target.groups:
        for blocks, size in _instances(obj, group):
            if target.composite is None and all(v is None for _, v in blocks.values()):
                continue
            inputs = {}
            for key in _LEAF_KEYS:
                path, value = blocks.get(key, ((), None))
                if key == "schedulingPolicy" and group.semantics.nonPositiveMinCountIsUnset:
                    value = _unset_nonpositive(value)
                inputs[key] = BlockInput(pod_group_data=value, path_elements=tuple(path))
            items.append(WorkloadItem(template_name(name, len(items)), Path(),
                                      SchedulingConfig(policy=_default_policy(group.semantics.defaultPolicy)),
                                      WorkloadInput(inputs["schedulingPolicy"], inputs["schedulingConstraints"],
                                                    inputs["disruptionMode"], inputs["resourceClaims"]),
                                      [_min_count_default(size)]))
    return items


def _job_item(obj: dict, name: str) -> list[WorkloadItem]:
    """The Job controller's tree (pkg/api/job WorkloadItemForJob): one leaf `<job>-pgt-0`, basic by
    default, the Pod template's priorityClassName, an unset minCount = max(1, parallelism)."""
    spec = obj.get("spec") or {}
    if not isinstance(spec.get("scheduling"), dict):
        return []
    priority = ((spec.get("template") or {}).get("spec") or {}).get("priorityClassName") or ""
    parallelism = spec.get("parallelism")
    return [WorkloadItem(template_name(name), Path("spec", "scheduling"),
                         SchedulingConfig(policy=SchedulingPolicy(basic=True), priority_class_name=priority),
                         WorkloadInput.leaf(spec["scheduling"]),
                         [_min_count_default(parallelism if isinstance(parallelism, int) else 1)])]


def trees(obj: dict, cfg: Config) -> list[WorkloadItem] | None:
    """The object's trees (one per Workload), or None when it is no target."""
    api = str(obj.get("apiVersion") or "")
    group, _, version = api.rpartition("/")
    name = str((obj.get("metadata") or {}).get("name") or "")
    if (group, obj.get("kind")) == ("batch", "Job"):
        return _job_item(obj, name)
    target = cfg.target_for(group, version, str(obj.get("kind") or ""))
    if target is None:
        return None
    leaves = _leaf_items(obj, target, name)
    if target.composite is None:
        return leaves
    blocks, _, _ = composite_instance(obj, None, target.composite, [])
    value = {k: b.value for k, b in blocks.items()}
    if not leaves and all(v is None for v in value.values()):
        return []
    inp = WorkloadInput(*(BlockInput(composite_pod_group_data=value.get(k),
                                     path_elements=tuple(blocks[k].path) if k in blocks else ())
                          for k in ("schedulingPolicy", "schedulingConstraints", "disruptionMode")))
    return [WorkloadItem(f"{name}-cpgt-0", Path(), None, inp,
                         [_min_count_default(len(leaves))], leaves)]


def validate_trees(items: list[WorkloadItem]) -> list[FieldError]:
    """What the builder itself refuses (the allow-lists allow everything: the engine judged the rest)."""
    return [e for item in items for e in Builder(item, BuildOptions(allowed_policies=ALL_POLICIES,
                                                                    allowed_disruption_modes=ALL_MODES)).validate()]


def render(obj: dict, cfg: Config) -> Rendered | None:
    """The Workloads, CompositePodGroups and PodGroups for a valid target object (None: not a target)."""
    items = trees(obj, cfg)
    if items is None:
        return None
    if not items:
        return Rendered(note="no scheduling blocks set: no Workload")
    meta = obj.get("metadata") or {}
    name, owner = str(meta.get("name") or ""), owner_of(obj)
    out = Rendered()
    for i, root in enumerate(items):
        wl_name = workload_name(name if len(items) == 1 else f"{name}-{i}", owner["uid"])
        b = Builder(root, BuildOptions(name=wl_name, namespace=str(meta.get("namespace") or ""), owner=owner,
                                       allowed_policies=ALL_POLICIES, allowed_disruption_modes=ALL_MODES))
        out.objects.append(b.build_workload())
        if root.composite:
            parent = pod_group_name(wl_name, root.name)
            out.objects.append(b.new_composite_pod_group(parent, root.name))
            out.objects += [b.new_child_pod_group(pod_group_name(wl_name, c.name), c.name, parent)
                            for c in root.children]
        else:
            out.objects.append(b.new_pod_group(pod_group_name(wl_name, root.name), root.name))
    return out
