"""What the commands that read files share: the configuration (a file plus
shipped profiles), the manifests, how an object is named, the exit codes."""
from __future__ import annotations

import argparse
import os
import sys

from webhook import config as config_mod
from webhook import manifests

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2


def profile(text: str) -> str | dict:
    """`jobset`, `leaderworkerset` (or `lws`), or `job-template:KIND.GROUP:JOBSPEC_PATH`."""
    if not text.startswith("job-template:"):
        return text
    _, _, rest = text.partition(":")
    kind_group, _, job_spec = rest.partition(":")
    kind, _, group = kind_group.partition(".")
    if not (kind and group and job_spec):
        raise argparse.ArgumentTypeError("job-template needs KIND.GROUP:JOBSPEC_PATH, "
                                         "e.g. job-template:CronTrainJob.example.com:spec.jobTemplate.spec")
    return {"name": "job-template", "group": group, "kind": kind, "jobSpec": job_spec}


def load_config(path: str | None, profiles: list | None = None) -> config_mod.Config:
    try:
        return config_mod.load(path, profiles or ())
    except config_mod.ConfigError as exc:
        print(str(exc), file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def load(paths: list[str]) -> tuple[list[manifests.Document], list[manifests.FileProblem]]:
    try:
        return manifests.load(paths)
    except FileNotFoundError as exc:
        print(f"error: {exc.args[0]}: no such file or directory", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def label(obj) -> tuple[str, str, str | None]:
    _, kind, ns, name = manifests.identity(obj)
    return kind or "<no kind>", f"{ns}/{name}" if ns else (name or "<no name>"), ns or None


def package_version() -> str:
    from importlib import metadata
    try:
        return metadata.version("workload-webhook")
    except metadata.PackageNotFoundError:     # run from a source tree that was never installed
        return "unknown (not installed)"


def exit_now(code: int) -> None:
    """End the command line process once its output is out: freeing a large input's objects
    one by one took as long as printing them (0.9 s of 50 MB)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)
