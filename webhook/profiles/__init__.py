"""Shipped profiles: the targets of the operators that really embed the blocks,
as data (one YAML file each), selected by one line of config:

    profiles: [jobset, leaderworkerset]
    profiles: [{name: job-template, group: example.com, kind: CronTrainJob, jobSpec: spec.jobTemplate.spec}]

A profile expands into ordinary target entries (docs/configuration.md plus the semantics
of webhook.semantics), so the engine has no branch per operator."""
from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any

import yaml

from webhook.field import FieldError, Path, invalid, not_supported
from webhook.schemas import structural_errors

_DIR = os.path.dirname(__file__)
#: The shipped profiles: one YAML file each, named as a config names it.
NAMES = tuple(sorted(f[:-len(".yaml")] for f in os.listdir(_DIR) if f.endswith(".yaml")))
_PARAM = re.compile(r"\{(\w+)\}")
# job-template's parameters; the others take none.
_JOB_TEMPLATE_KEYS = ("group", "kind", "versions", "plural", "jobSpec")


@lru_cache(maxsize=None)
def data(name: str) -> dict:
    with open(os.path.join(_DIR, f"{name}.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


@lru_cache(maxsize=None)
def aliases() -> dict[str, str]:
    """Short names a config or `--profile` may use instead, from each profile's own `aliases`
    (`lws`, as the LWS project calls itself) -> the profile's name."""
    return {alias: name for name in NAMES for alias in data(name).get("aliases") or ()}


def every_name() -> tuple[str, ...]:
    """What a config's `profiles` (and `--profile`) accepts: each profile's name and short names."""
    return (*NAMES, *aliases())


def _fill(node: Any, params: dict[str, str]) -> Any:
    if isinstance(node, str):
        return _PARAM.sub(lambda m: params[m.group(1)], node)
    if isinstance(node, list):
        return [_fill(n, params) for n in node]
    if isinstance(node, dict):
        return {k: _fill(v, params) for k, v in node.items()}
    return node


def expand(entries: list, errors: list[FieldError]) -> list[dict]:
    """Target entries for the `profiles` list of a config file."""
    out: list[dict] = []
    for i, entry in enumerate(entries):
        where = Path("profiles", i)
        name = entry if isinstance(entry, str) else entry.get("name")
        name = aliases().get(name, name) if isinstance(name, str) else name
        if not isinstance(entry, (str, dict)) or name not in NAMES:
            errors.append(not_supported(where if isinstance(entry, str) else where.child("name"), name, every_name()))
            continue
        if name == "job-template":
            if isinstance(entry, str):
                errors.append(invalid(where, name, "job-template needs group, kind and jobSpec (the path of the JobSpec)"))
                continue
            problems = [f"{k} is required" for k in ("group", "kind", "jobSpec") if not isinstance(entry.get(k), str)]
            problems += [f"unknown key {k!r}" for k in entry if k not in (*_JOB_TEMPLATE_KEYS, "name")]
            if problems:
                errors.append(invalid(where, name, "job-template: " + "; ".join(problems)
                                      + " (group, kind, jobSpec: the path of the JobSpec; versions, plural optional)"))
                continue
            params = {k: entry[k] for k in _JOB_TEMPLATE_KEYS if k in entry}
            target = {k: params[k] for k in ("group", "kind", "versions", "plural") if k in params}
            target.update(_fill(data(name)["target"], {"jobSpec": params["jobSpec"]}))
            # The parameters land in a target entry: the config schema judges them there.
            problems = structural_errors("config", {"targets": [target]})
            errors += [invalid(where, name, f"job-template: {p.field}: {p.body()}") for p in problems]
            if not problems:
                out.append({**target, "profile": name})
        else:
            out += [{**t, "profile": name} for t in data(name)["targets"]]
    return out
