"""DEF-2, gang by default (opt-in, `gangByDefault`): at CREATE, in a selected namespace,
a batch/v1 Job that runs several Pods at once and says nothing about its scheduling gets
`spec.scheduling: {schedulingPolicy: {gang: {minCount: N}}, disruptionMode: {MODE: {}}}`,
N its parallelism (its completions when fewer: the Job controller never runs more Pods
than that at once). With the gate WorkloadWithJob the Job controller then compiles it
into the Job's Workload and PodGroup, and kube-scheduler places the Pods all or nothing.
The named targets' groups without a scheduling policy get a gang of their size too.

What the user set is never changed: a Job with any `spec.scheduling` (`basic: {}` is
the opt-out) is left alone, and so is a group with a policy. Left alone as well: a Job
with a controller owner (its parent decides: the Job controller makes no Workload for
it), a pod template that names a group of its own, a size above `limits.maxMinCount`.
The patch only adds (mutation/additions.py), so a second call adds nothing, and the
defaulted object must pass what kube-apiserver (rules/job.py) or the target's rules
judge; an addition that would not is dropped, with a warning."""
from __future__ import annotations

from typing import Any

from webhook.blocks import policy
from webhook.blocks.common import INT32_MAX
from webhook.view import ClusterUnavailable, ClusterView
from webhook.config import Config
from webhook.field import FieldError
from webhook.mutation import additions, patch
from webhook.rules import crd, job
from webhook.targets import Target
from webhook.verdict import Verdict

RULE = "DEF-2"
NAME_LABEL = "kubernetes.io/metadata.name"     # every namespace's own name, set by kube-apiserver


def selected(namespace: str | None, cfg: Config, view: ClusterView) -> tuple[bool, list[str]]:
    """Whether `namespace` is opted in, and a warning when its labels are unknown. Unknown
    labels count as selected: the webhook configuration's namespaceSelector already chose
    what the API server sends, and offline (`mutate` without the Namespace in --context)
    the answer shows what a selected namespace gets."""
    selector = cfg.gangByDefault.namespaceSelector
    if not selector.matchLabels and not selector.matchExpressions:
        return True, []
    namespace = namespace or "default"
    try:
        labels = view.namespace_labels(namespace)
    except ClusterUnavailable as exc:
        labels, why = None, f"not read ({exc})"
    else:
        why = "unknown"
    if labels is None:
        return True, [f"gangByDefault: the labels of namespace {namespace!r} are {why}; defaulted as if the "
                      f"namespaceSelector selected it ({RULE})"]
    return selector.matches({NAME_LABEL: namespace, **labels}), []


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _controlled(obj: dict) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") if isinstance(obj.get("metadata"), dict) else None
    return isinstance(refs, list) and any(isinstance(r, dict) and r.get("controller") is True for r in refs)


def job_gang_size(obj: dict) -> int | None:
    """The gang a Job's Pods make, or None when the Job is not eligible: parallelism > 1
    (unset is 1), capped by completions, no `spec.scheduling`, no controller owner, no
    `schedulingGroup` in its pod template."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("scheduling") is not None or _controlled(obj):
        return None
    template = (spec.get("template") or {}).get("spec") if isinstance(spec.get("template"), dict) else None
    if isinstance(template, dict) and template.get("schedulingGroup") is not None:
        return None
    parallelism, completions = _int(spec.get("parallelism")), _int(spec.get("completions"))
    size = min(parallelism, completions) if parallelism is not None and completions is not None else parallelism
    return size if size is not None and size > 1 else None


def scheduling(size: int, mode: str) -> dict:
    """The `spec.scheduling` DEF-2 writes (batch/v1 JobSchedulingConfiguration)."""
    return {"schedulingPolicy": {policy.GANG: {"minCount": size}}, "disruptionMode": {mode: {}}}


def _too_large(size: int, cfg: Config) -> bool:
    return size > min(cfg.maxMinCount or INT32_MAX, INT32_MAX)


def _new_errors(before: list[FieldError], after: list[FieldError]) -> list[FieldError]:
    seen = {(e.type, str(e.field), e.detail) for e in before}
    return [e for e in after if (e.type, str(e.field), e.detail) not in seen]


def mutate_job(obj: Any, namespace: str | None, cfg: Config, view: ClusterView) -> Verdict:
    """The Verdict's patch adds the gang a Job gets (gangByDefault on, jobs)."""
    if not isinstance(obj, dict):
        return Verdict(checked=False)
    size = job_gang_size(obj)
    if size is None:
        return Verdict()
    chosen, warnings = selected(namespace, cfg, view)
    if not chosen:
        return Verdict()
    if not cfg.gate(job.GATE):
        return Verdict(warnings=[f"spec.scheduling: no gang added: the feature gate {job.GATE} is off, and "
                                 f"kube-apiserver would refuse the field ({RULE})"])
    if _too_large(size, cfg):
        return Verdict(warnings=[f"spec.scheduling: no gang added: parallelism {size} is above "
                                 f"limits.maxMinCount ({cfg.maxMinCount}) ({RULE})"])
    adds = additions.Additions(obj)
    adds.member(("spec",), "scheduling", scheduling(size, cfg.gangByDefault.disruptionMode))
    refused = _new_errors(job.validate_job(obj, None, cfg).errors,
                          job.validate_job(patch.apply(obj, adds.ops), None, cfg).errors)
    if refused:
        return Verdict(warnings=[*warnings, f"spec.scheduling: no gang added: the API server would refuse it: "
                                            f"{refused[0]} ({RULE})"])
    return Verdict(warnings=warnings, patch=adds.ops)


def target_gang(obj: dict, target: Target, namespace: str | None, cfg: Config,
                view: ClusterView) -> tuple[dict, list[str]]:
    """`obj` with a gang of its size in each group instance that has no scheduling policy
    (gangByDefault on, the target named), and the warnings. Unchanged when none applies."""
    if not cfg.gangByDefault.for_target(target.key):
        return obj, []
    ignored: list[FieldError] = []          # shape problems are the validating webhook's to report
    wanted = []
    for group in target.groups:
        if group.semantics.minCount == "unset":
            continue                        # minCount may not be written: the operator computes it
        for inst in crd.leaf_instances(obj, None, group, ignored):
            pol, mode = inst.blocks.get("schedulingPolicy"), inst.blocks.get("disruptionMode")
            size = _int(inst.size)
            if pol is None or not pol.ok or pol.value is not None or size is None or size < 2 or _too_large(size, cfg):
                continue
            wanted.append((pol.path, {policy.GANG: {"minCount": size}}))
            if mode is not None and mode.ok and mode.value is None:
                wanted.append((mode.path, {cfg.gangByDefault.disruptionMode: {}}))
    if not wanted:
        return obj, []
    chosen, warnings = selected(namespace, cfg, view)
    if not chosen:
        return obj, []
    adds = additions.Additions(obj)
    for path, value in wanted:
        adds.member(tuple(path[:-1]), path[-1], value)
    mutated = patch.apply(obj, adds.ops)
    refused = _new_errors(crd.validate_target(obj, None, target, cfg).errors,
                          crd.validate_target(mutated, None, target, cfg).errors)
    if refused:
        return obj, [*warnings, f"no gang added: the target's rules would refuse it: {refused[0]} ({RULE})"]
    return mutated, warnings
