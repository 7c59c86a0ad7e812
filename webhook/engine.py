"""The one entry point the server, the CLI and the tests share: a request in,
a Verdict out. Pure: the only outside input is the ClusterView passed in."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from webhook import enforcement, kinds
from webhook.foreign import admission as bridge_admission, dialects as bridge_dialects
from webhook.view import ClusterUnavailable, ClusterView, DisabledView
from webhook.config import Config
from webhook.field import FieldError, Path, invalid
from webhook.verdict import Verdict
from webhook.mutation import gang_default, patch, pods
from webhook.mutation.defaults import default_target
from webhook.rules import composite_podgroup, crd, job, pod_templates, podgroup, pods as pod_rules, workload

NOT_JUDGED = ("DELETE", "CONNECT")


@dataclass(slots=True)
class Request:
    """What admission (or a file on disk) tells about one object. Never changed once made
    (nothing assigns to it), but not `frozen`: a frozen dataclass sets each field through
    object.__setattr__, 2.5x the cost of this __init__, once per Pod of a burst."""
    operation: str                 # CREATE | UPDATE | DELETE | CONNECT
    group: str
    version: str
    kind: str
    object: Any
    old_object: Any = None
    namespace: str | None = None
    dry_run: bool = False

    @classmethod
    def for_object(cls, obj: dict, old: dict | None = None) -> "Request":
        """A request for a manifest: group/version/kind from its apiVersion/kind."""
        api_version = str(obj.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        namespace = (obj.get("metadata") or {}).get("namespace") if isinstance(obj.get("metadata"), dict) else None
        return cls("UPDATE" if old is not None else "CREATE", group, version, str(obj.get("kind") or ""),
                   obj, old, namespace)

    @property
    def old(self) -> dict | None:
        return self.old_object if self.operation == "UPDATE" and isinstance(self.old_object, dict) else None


def _dedupe(errors: list[FieldError]) -> list[FieldError]:
    """Each error once (FieldError.identity: the one notion of "the same error")."""
    if len(errors) < 2:
        return errors
    seen, out = set(), []
    for e in errors:
        key = e.identity
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def _guarded(fn, *args) -> Verdict:
    """Hostile nesting must end in a denial, never in an exception."""
    try:
        return fn(*args)
    except RecursionError:
        return Verdict(errors=[invalid(Path(), "", "object is nested too deeply")])


def validate(req: Request, cfg: Config, view: ClusterView | None = None, scope: str = "admission") -> Verdict:
    """`scope` (admission | cli | audit) selects the enforcement overrides that apply. Unknown
    fields are not the engine's: `validate` adds them (webhook/schemas/unknown_fields.py)."""
    view = view or DisabledView()
    return _enforced(_guarded(_validate, req, cfg, view), req, cfg, view, scope)


def mutate(req: Request, cfg: Config, view: ClusterView | None = None, scope: str = "admission") -> Verdict:
    view = view or DisabledView()
    return _enforced(_guarded(_mutate, req, cfg, view), req, cfg, view, scope)


def _enforced(verdict: Verdict, req: Request, cfg: Config, view: ClusterView, scope: str) -> Verdict:
    """Violations of this service's own rules as `enforcement` says (deny, warn, audit)."""
    if not verdict.errors:
        return verdict

    memo: list = []

    def labels() -> dict | None:
        """Read at most once per request, whatever the number of violations."""
        if not memo:
            try:
                memo.append(view.namespace_labels(req.namespace) if req.namespace else None)
            except ClusterUnavailable:
                memo.append(None)   # unknown namespace labels: the rule-, target- and default actions apply
        return memo[0]
    return enforcement.apply(verdict, cfg.enforcement, req.kind, labels, scope)


def _validate(req: Request, cfg: Config, view: ClusterView) -> Verdict:
    if req.operation in NOT_JUDGED:
        return Verdict(checked=False)
    obj, old = req.object, req.old
    if foreign := bridge_dialects.for_kind(cfg.bridge, req.group, req.version, req.kind):     # BRG-1
        return bridge_admission.validate_foreign(obj, foreign, req.operation)
    target = cfg.target_for(req.group, req.version, req.kind)
    is_core = kinds.scheduling_kind(req.group, req.version, req.kind) is not None
    is_pod = kinds.is_pod(req.group, req.version, req.kind)
    holder = None if is_core or is_pod else kinds.workload_kind(req.group, req.version, req.kind)   # Pods: no cost
    if not (target or is_core or is_pod or holder):
        return Verdict(checked=False)
    if not isinstance(obj, dict):
        return Verdict(errors=[invalid(Path(), obj, "must be of type object")])
    if holder is not None:       # built in: a target naming these kinds is judged so too
        return _workload(obj, old, holder, cfg)
    if is_pod:
        if req.operation != "CREATE":
            return Verdict(checked=False)
        return Verdict(errors=_dedupe(pod_rules.check_pod(obj, cfg)))
    if is_core:
        if req.kind == "Workload":
            found = workload.validate_workload(obj, old, cfg)
        elif req.kind == "PodGroup":
            found = podgroup.validate_podgroup(obj, old, cfg, view)
        else:
            found = composite_podgroup.validate_composite_podgroup(obj, old, cfg)
    else:
        found = crd.validate_target(obj, old, target, cfg)
    return replace(found, errors=_dedupe(found.errors))


def _workload(obj: dict, old: dict | None, holder: kinds.Kind, cfg: Config) -> Verdict:
    """A built-in workload kind: a Job's (CronJob's) scheduling, and the Pod rules on its pod template."""
    found = Verdict()
    if holder == kinds.JOB:
        found = job.validate_job(obj, old, cfg)
    elif holder == kinds.CRONJOB:
        found = job.validate_cronjob(obj, old, cfg)
    errors = found.errors + pod_templates.validate_template(obj, old, kinds.POD_TEMPLATES[holder], cfg)
    return replace(found, errors=_dedupe(errors))


def _mutate(req: Request, cfg: Config, view: ClusterView) -> Verdict:
    if req.operation != "CREATE":           # POD-7, DEF-1: only CREATE is mutated
        return Verdict(checked=False)
    obj = req.object
    if kinds.is_pod(req.group, req.version, req.kind):
        out = pods.mutate_pod(obj, req.namespace, cfg, view)
        # With errors the patch is only sent if enforcement admits the Pod (respond() drops it otherwise).
        # Fewer than two errors have nothing to de-duplicate: the Verdict as it is (no copy per Pod).
        return replace(out, errors=_dedupe(out.errors)) if len(out.errors) > 1 else out
    if cfg.gangByDefault.for_jobs and kinds.workload_kind(req.group, req.version, req.kind) == kinds.JOB:
        return gang_default.mutate_job(obj, req.namespace, cfg, view)                           # DEF-2
    target = cfg.target_for(req.group, req.version, req.kind)
    if target is None or not isinstance(obj, dict):
        return Verdict(checked=False)
    ganged, warnings = gang_default.target_gang(obj, target, req.namespace, cfg, view)           # DEF-2
    ops = patch.diff(obj, default_target(ganged, target, cfg.maxMinCount))
    return Verdict(patch=ops or None, warnings=warnings)
