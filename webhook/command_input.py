"""What the commands (webhook/commands/) share: the configuration (a file plus
shipped profiles), the manifests, how an object is named, the exit codes, the
flags several commands take."""
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
    """The file plus the profiles; a config_mod.ConfigError is said and exits 2 (webhook/cli.py)."""
    return config_mod.load(path, profiles or ())


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


def at_least(low: int):
    """argparse type: an integer no smaller than `low`."""
    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}")
        return value
    return parse


def filename_args(p: argparse.ArgumentParser, what: str) -> None:
    """`-f PATH`, repeatable and required: the objects a command reads."""
    p.add_argument("-f", "--filename", action="append", required=True, metavar="PATH",
                   help=f"{what} (file, directory or - for stdin); repeatable")


def load_all(*path_lists: list[str] | None) -> list[list[manifests.Document]] | None:
    """The documents of each list of paths (an absent list reads as none), or None once every
    problem is said: an input that cannot be read or parsed is exit 2, as a path that is not there."""
    loaded = [load(paths) if paths else ([], []) for paths in path_lists]
    problems = [p for _, found in loaded for p in found]
    for p in problems:
        print(f"{p.where}: error: {p.message}", file=sys.stderr)
    return None if problems else [docs for docs, _ in loaded]


def objects(docs: list[manifests.Document]) -> tuple[list[tuple[manifests.Document, str, str]], int]:
    """(document, kind, name) of each document that is an object, and the exit code so far:
    a document that is not an object is said and makes it EXIT_VIOLATION."""
    found, status = [], EXIT_OK
    for doc in docs:
        if not isinstance(doc.obj, dict):
            print(f"{doc.file}: error: not an object", file=sys.stderr)
            status = EXIT_VIOLATION
            continue
        kind, ident, _ = label(doc.obj)
        found.append((doc, kind, ident))
    return found, status


def config_args(p: argparse.ArgumentParser) -> None:
    """The configuration of the commands that judge objects: a file plus shipped profiles."""
    p.add_argument("--config", metavar="FILE", help="configuration file (docs/configuration.md)")
    p.add_argument("--profile", action="append", type=profile, metavar="NAME",
                   help="add a shipped profile: jobset, leaderworkerset (lws), job-template:KIND.GROUP:JOBSPEC_PATH; "
                        "repeatable")


def resource_args(p: argparse.ArgumentParser) -> None:
    """Where the targets' resource names come from (see target_resources)."""
    p.add_argument("--crd", action="append", metavar="PATH",
                   help="the targets' CustomResourceDefinitions (file or directory; repeatable): their plurals")
    p.add_argument("--kubeconfig", metavar="FILE", help="ask this cluster's discovery for the targets' resources")


def target_resources(args: argparse.Namespace, targets):
    """The targets' resource names (--kubeconfig: discovery; --crd: the CRDs; else the config),
    or None after saying which target has none (webhook.cluster.discovery)."""
    from webhook.cluster.discovery import resources_from
    from webhook.targets import UnknownResource
    crds, problems = load(args.crd) if args.crd else ([], [])
    for p in problems:
        print(f"{p.where}: error: {p.message}", file=sys.stderr)
    if problems:
        return None
    try:
        return resources_from(targets, crds, args.kubeconfig)
    except UnknownResource as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
    except Exception as exc:         # an unreachable cluster, a refused discovery
        print(f"error: --kubeconfig {args.kubeconfig}: {(str(exc).splitlines() or [type(exc).__name__])[0]}",
              file=sys.stderr)
    return None
