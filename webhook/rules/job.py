"""A batch/v1 Job's `spec.scheduling` (and a CronJob's `spec.jobTemplate.spec.scheduling`)
as kube-apiserver 1.37 judges it, built in: no profile needed.

Two layers, as in kube-apiserver (k8s.io/kubernetes pkg/apis/batch):
- the declarative validation of the embedded blocks and their update tags
  (gate `WorkloadWithJob`, `+k8s:update=NoSet,NoUnset`, frozen blocks, ratcheting):
  the job-template profile's target, which the differential test holds to upstream;
- the hand-written rules, on every create and update (no ratcheting):
  `gang.minCount` <= parallelism (default 1; never completions), `all` with a
  policy that resolves to basic, and on a Job (not a CronJob, which makes a new
  Workload per Job) the frozen basic/gang variant.
Every one of them is the API server's own rule, so its errors are mirrors: no rule
id, the API server's words, never relaxed by `enforcement` or `policies`.
Only the config's own limits (`limits.maxMinCount`, `limits.allowedTopologyKeys`)
add policy errors (POL-3, CON-1)."""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any

from webhook import profiles
from webhook.blocks import disruption, policy
from webhook.blocks.common import check_no_set_no_unset, same
from webhook.config import Config
from webhook.field import FieldError, Path, gated_off, invalid
from webhook.paths import get_or_none
from webhook.rules import crd
from webhook.targets import Target, parse_target
from webhook.verdict import Verdict

GATE = "WorkloadWithJob"
SET_ONCE_RULE = "TGT-4"            # the target's id for `setOnce`: on a Job it is the API server's tag


@lru_cache(maxsize=None)
def _target(job_spec: tuple[str, ...]) -> Target:
    """The job-template profile at `job_spec`, parsed once."""
    errors: list[FieldError] = []
    entry = profiles.expand([{"name": "job-template", "group": "batch", "kind": "Job",
                              "jobSpec": ".".join(job_spec)}], errors)
    target = parse_target(entry[0], Path(), errors) if entry else None
    if errors or target is None:
        raise RuntimeError(f"the job-template profile does not parse at {job_spec}: {errors}")
    return target


def validate_job_spec(obj: dict, old: dict | None, job_spec: tuple[str, ...], cfg: Config,
                      variant_frozen: bool) -> Verdict:
    """The JobSpec at `job_spec` (`("spec",)` in a Job), as kube-apiserver judges its scheduling."""
    spec_path = Path(*job_spec)
    sched_path = spec_path.child("scheduling")
    spec = get_or_none(obj, spec_path)
    sched = get_or_none(obj, sched_path)
    old_sched = get_or_none(old, sched_path) if old is not None else None
    changed = old is None or not same(sched, old_sched)
    if sched is not None and changed and not cfg.gate(GATE):
        # `+k8s:ifDisabled(WorkloadWithJob)=+k8s:forbidden` short-circuits the blocks' own rules.
        errors = [gated_off(sched_path, GATE)]
        if old is not None:
            errors += check_no_set_no_unset(sched, old_sched, sched_path)
        return Verdict(errors=errors + hand_written(spec, sched_path))
    blocks_only = dataclasses.replace(cfg, minCountWithinSize=False, forbidAllWithBasic=False)
    found = crd.validate_target(obj, old, _target(job_spec), blocks_only)
    errors = [dataclasses.replace(e, rule=None) if e.rule == SET_ONCE_RULE else e for e in found.errors
              if variant_frozen or e.code != policy.VARIANT_FROZEN]     # a CronJob does not freeze the variant
    return dataclasses.replace(found, errors=errors + hand_written(spec, sched_path))


def validate_job(obj: dict, old: dict | None, cfg: Config) -> Verdict:
    return validate_job_spec(obj, old, ("spec",), cfg, variant_frozen=True)


def validate_cronjob(obj: dict, old: dict | None, cfg: Config) -> Verdict:
    return validate_job_spec(obj, old, ("spec", "jobTemplate", "spec"), cfg, variant_frozen=False)


def _int(value: Any) -> int | None:
    if isinstance(value, float) and value.is_integer():
        return int(value)           # YAML `4.0` read offline
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def hand_written(spec: Any, sched_path: Path) -> list[FieldError]:
    """batch validateGangMinCount and validateJobScheduling (workloadbuilder's cross-field rule),
    judged on every create and update; blocks of the wrong shape are the shape check's."""
    sched = spec.get("scheduling") if isinstance(spec, dict) else None
    if not isinstance(sched, dict):
        return []
    pol, mode = sched.get("schedulingPolicy"), sched.get("disruptionMode")
    pol_path, mode_path = sched_path.child("schedulingPolicy"), sched_path.child("disruptionMode")
    pol_ok = not policy.shape(pol, pol_path)
    errors: list[FieldError] = []
    count = _int(policy.get_min_count(pol)) if pol_ok else None
    parallelism = 1 if spec.get("parallelism") is None else _int(spec["parallelism"])
    if count is not None and parallelism is not None and count > parallelism:
        errors.append(invalid(pol_path.child("gang", "minCount"), count,
                              f"must not be greater than parallelism ({parallelism})"))
    if pol_ok and isinstance(mode, dict) and not disruption.shape(mode, mode_path) \
            and mode.get("single") is None and mode.get("all") is not None and _resolves_to_basic(pol):
        errors.append(invalid(mode_path, "", "the disruptionMode `all` is not supported with the Basic scheduling policy"))
    return errors


def _resolves_to_basic(pol: Any) -> bool:
    """As workloadbuilder resolves a Job's policy: `basic` wins, then `gang`; neither is the Job's default, basic."""
    return not isinstance(pol, dict) or pol.get("basic") is not None or pol.get("gang") is None
