"""Which objects of an input `validate` judges, before any rule runs: judged
(a configured target, a scheduling kind, a Pod, a Job or CronJob, a workload
with a pod template), skipped (suspicious: a configured kind at a version the
config does not cover, or no apiVersion/kind: a CRD's new version must not
switch the gate off unnoticed), or unrelated (a ConfigMap, a Service, a kind
given to `--skip`). An unrelated kind costs a
dictionary lookup per object: the answer is kept per (apiVersion, kind).

A JobSet or LeaderWorkerSet that no target covers is unrelated too, with a
hint naming the shipped profile that judges it. A Coscheduling or Volcano PodGroup is
judged when the config's `bridge` switches its dialect on (BRG-1's warnings, as the
server answers its create), else unrelated with a hint naming the config key."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Iterable

from webhook import kinds, profiles
from webhook.foreign import admission as bridge_admission, dialects as bridge_dialects
from webhook.config import Config

JUDGED, SKIPPED, UNRELATED = "judged", "skipped", "unrelated"


@cache
def _profile_of() -> dict[tuple[str, str], str]:
    """The shipped profiles that need no parameters (they list their targets), by the (group, kind)
    they judge: the shortest name that selects each."""
    short = {name: alias for alias, name in profiles.aliases().items()}
    return {(t["group"], t["kind"]): min((name, short.get(name, name)), key=len) for name in profiles.NAMES
            for t in profiles.data(name).get("targets") or ()}


@dataclass(frozen=True)
class Coverage:
    """What happens to an object of one apiVersion and kind."""
    state: str                    # JUDGED | SKIPPED | UNRELATED
    reason: str | None = None     # why it is not judged, in the user's terms
    profile: str | None = None    # the flag or config key that would judge it (`--profile jobset`)
    warns: str | None = None      # the rule whose findings the engine's warnings on it are (a foreign PodGroup's)


def parse_skip(values: Iterable[str] | None) -> frozenset[str]:
    """`--skip` values: KIND, KIND.GROUP or APIVERSION/KIND (kubeconform's), comma-separated, repeatable."""
    return frozenset(s.strip() for v in values or () for s in v.split(",") if s.strip())


class Classifier:
    def __init__(self, cfg: Config, skip: frozenset[str] = frozenset()):
        self.cfg, self.skip = cfg, skip
        self._known: dict[tuple[str, str], Coverage] = {}

    def of(self, obj: Any) -> Coverage:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        key = (api_version, kind)
        try:
            return self._known[key]
        except KeyError:
            pass
        except TypeError:                  # an unhashable apiVersion or kind
            return self._decide(str(api_version), str(kind))
        found = self._known[key] = self._decide(api_version, kind)
        return found

    def _decide(self, api_version: Any, kind: Any) -> Coverage:
        if not api_version or not kind or not isinstance(api_version, str) or not isinstance(kind, str):
            return Coverage(SKIPPED, "no apiVersion/kind")
        group, _, version = api_version.rpartition("/")
        if self.skip & {kind, f"{kind}.{group}" if group else kind, f"{api_version}/{kind}"}:
            return Coverage(UNRELATED, "--skip")
        cfg = self.cfg
        if bridge_dialects.for_kind(cfg.bridge, group, version, kind):      # as the engine asks first
            return Coverage(JUDGED, warns=bridge_admission.RULE)
        if cfg.target_for(group, version, kind) or kinds.scheduling_kind(group, version, kind) \
                or kinds.is_pod(group, version, kind) or kinds.workload_kind(group, version, kind):
            return Coverage(JUDGED)
        served = [t for t in cfg.targets if t.group == group and t.kind == kind]
        known = next((k for k in (*kinds.SCHEDULING_KINDS, kinds.POD) if k.group == group and k.kind == kind), None)
        versions = sorted({v for t in served for v in t.versions}) or (list(known.versions) if known else [])
        if versions:
            return Coverage(SKIPPED, f"no rules for {api_version} {kind} (the rules cover {', '.join(versions)})")
        off = next((d for d in bridge_dialects.ALL if d.matches(group, version, kind)), None)
        if off is not None:
            key = f"bridge.{off.name}: true in --config"
            return Coverage(UNRELATED, f"no rules for {kind}.{group}: the bridge is off for {off.title}; {key} "
                                       "judges it as the server does", key)
        profile = _profile_of().get((group, kind))
        if profile:
            flag = f"--profile {profile}"
            return Coverage(UNRELATED, f"no rules for {kind}.{group}: not a target of the configuration; "
                                       f"{flag} judges it", flag)
        return Coverage(UNRELATED, f"no rules for {kind}.{group or 'core'}: not a target of the configuration")
