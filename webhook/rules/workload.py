"""Workload: its template tree (leaf and composite templates, depth, names), one
priority configuration for the whole tree, gates (WL-1, WL-2)."""
from __future__ import annotations

from webhook import formats
from webhook.blocks import composite, priority
from webhook.blocks.common import check_immutable
from webhook.config import Config
from webhook.field import FieldError, Path, duplicate, forbidden, invalid, mirrors, too_many
from webhook.verdict import Verdict
from webhook.rules.core import (CPG, MAX_DEPTH, MAX_TEMPLATES, SPEC, block_errors, block_update_errors, changed,
                                gate_forbidden, name_errors, object_spec)


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
            self.errors += name_errors(name, tpath.child("name"), formats.dns_label)
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
            self.errors += block_errors(t, old_t, tpath, self.cfg, leaf)
            if old_t is not None:
                self.errors += block_update_errors(t, old_t, tpath, leaf)
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
    judged = object_spec(obj, old, "workload", found)
    if judged is None:
        return found
    spec, old_spec = judged
    before = len(found.errors)      # what follows is WL-1's, where no block or gate rule found it
    ref = spec.get("controllerRef")
    if ref is not None and changed(spec, old_spec, "controllerRef"):
        rpath = SPEC.child("controllerRef")
        if ref.get("apiGroup") and (problem := formats.dns_subdomain(ref["apiGroup"])):
            found.errors.append(invalid(rpath.child("apiGroup"), ref["apiGroup"], problem))
        found.errors += name_errors(ref.get("kind"), rpath.child("kind"), formats.path_segment_name)
        found.errors += name_errors(ref.get("name"), rpath.child("name"), formats.path_segment_name)
    if old_spec is not None:
        found.errors += check_immutable(spec.get("controllerRef"), old_spec.get("controllerRef"),
                                        SPEC.child("controllerRef"))

    # WL-1/WL-2: exactly one of the lists; the union names only members whose gate is on.
    members = ("podGroupTemplates", "compositePodGroupTemplates") if cfg.gate(CPG) else ("podGroupTemplates",)
    gated_off = gate_forbidden(spec, "compositePodGroupTemplates", SPEC, CPG, cfg) \
        if changed(spec, old_spec, "compositePodGroupTemplates") else []
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
    found.errors[before:] = mirrors(found.errors[before:], "WL-1")
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
