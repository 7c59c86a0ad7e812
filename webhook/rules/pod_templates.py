"""The Pod rules on a workload's pod template (Deployment, StatefulSet, ReplicaSet,
DaemonSet, Job, CronJob): what every Pod created from it will be refused for
(POD-1, POD-3 and the membership mirrors of rules/pods.py), reported at the
template's own path (`spec.template.metadata.labels[...]`), so a manifest is
refused before its Pods are. POD-4 and POD-5 read the PodGroup the Pods join,
which exists (or not) when they are created: they are not judged on a template.
On update only what the stored template did not already break is reported."""
from __future__ import annotations

import dataclasses

from webhook.config import Config
from webhook.field import FieldError, Path
from webhook.paths import WrongType, get
from webhook.rules import pods


def _errors(obj: dict, path: Path, cfg: Config) -> list[FieldError]:
    try:
        template = get(obj, path)
    except WrongType as exc:
        return [exc.error]
    if template is None:
        return []
    return [dataclasses.replace(e, field=Path(*path, *e.field)) for e in pods.check_pod(template, cfg)]


def validate_template(obj: dict, old: dict | None, at: tuple[str, ...], cfg: Config) -> list[FieldError]:
    path = Path(*at)
    errors = _errors(obj, path, cfg)
    if old is None or not errors:
        return errors
    before = {e.identity for e in _errors(old, path, cfg)}
    return [e for e in errors if e.identity not in before]
