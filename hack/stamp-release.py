#!/usr/bin/env python3
"""Stamp a copy of the chart with where its release comes from, before `helm package`.

The checked-in chart names no owner: the release workflow (.github/workflows/release.yaml)
runs this on its checkout with the repository it runs in (github.server_url/github.repository),
the ref it was released from (the tag v<version>) and the image it pushed, and packages the
result. It writes:

  Chart.yaml   home and sources (the repository), icon (the chart's icon.svg at the ref), each
               maintainer's url (the repository), the artifacthub.io/links annotation (docs/helm.md
               at the ref)
  values.yaml  image.registry, image.repository, image.digest (the pushed image), and
               prometheusRule.runbookBaseURL (docs/operations.md at the ref)

Lines are edited in place, so every other line and comment of values.yaml stays for `helm show
values`. Only the
standard library: the runner's python3 runs it. Each problem is one line on stderr, exit 2.

  hack/stamp-release.py CHART_DIR --source-url https://github.com/OWNER/REPO --ref vX.Y.Z \
      --registry ghcr.io --repository OWNER/workload-webhook --digest sha256:...
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
SOURCE = re.compile(r"https://[A-Za-z0-9.-]+(:[0-9]+)?/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
NAME = re.compile(r"[a-z0-9]+([._/-][a-z0-9]+)*")
CHART_KEYS = ("home", "sources", "icon")


class StampError(Exception):
    """One line: what is wrong and where."""


def _quoted(value: str) -> str:
    return json.dumps(value)          # a JSON string is a YAML double-quoted scalar


def _block(lines: list[str], key: str, path: str) -> tuple[int, int]:
    """The lines of top-level `key:` (its own line, then everything indented or blank after it)."""
    starts = [i for i, line in enumerate(lines) if re.fullmatch(rf"{re.escape(key)}:\s*(#.*)?", line)]
    if len(starts) != 1:
        raise StampError(f"{path}: expected one top-level `{key}:` block, found {len(starts)}")
    end = starts[0] + 1
    while end < len(lines) and (lines[end][:1] in (" ", "#") or not lines[end].strip()):
        end += 1
    return starts[0], end


def set_value(lines: list[str], key: str, child: str, value: str, path: str) -> None:
    """`key.child: <value>` in place (two-space indent), its comment saying where the value came from."""
    start, end = _block(lines, key, path)
    pattern = re.compile(rf"(  {re.escape(child)}:)[ \t]*(\"[^\"]*\"|'[^']*'|[^\s#][^#]*?)?([ \t]+#.*)?")
    hits = [i for i in range(start + 1, end) if pattern.fullmatch(lines[i])]
    if len(hits) != 1:
        raise StampError(f"{path}: expected one scalar `{key}.{child}` on a line of its own, found {len(hits)}")
    match = pattern.fullmatch(lines[hits[0]])
    lines[hits[0]] = f"{match.group(1)} {_quoted(value)}   # this release's (hack/stamp-release.py)"


def stamp_chart_yaml(text: str, source: str, ref: str, path: str) -> str:
    lines = text.splitlines()
    for key in CHART_KEYS:
        if any(re.match(rf"{key}:", line) for line in lines):
            raise StampError(f"{path}: `{key}` is already set; the release writes it (leave it out of the checkout)")
    start, end = _block(lines, "maintainers", path)
    items = [i for i in range(start + 1, end) if re.fullmatch(r"  - name: .+", lines[i])]
    if not items or any(re.match(r"\s+url:", lines[i]) for i in range(start + 1, end)):
        raise StampError(f"{path}: `maintainers` must list entries `  - name: ...` without a url (the release adds it)")
    for i in reversed(items):
        lines.insert(i + 1, f"    url: {_quoted(source)}")
    start, end = _block(lines, "annotations", path)
    if any(line.startswith("  artifacthub.io/links:") for line in lines[start + 1:end]):
        raise StampError(f"{path}: `annotations.artifacthub.io/links` is already set; the release writes it")
    lines[start + 1:start + 1] = ["  artifacthub.io/links: |",
                                  "    - name: Documentation",
                                  f"      url: {source}/blob/{ref}/docs/helm.md"]
    lines += ["# Written by hack/stamp-release.py for this release:",
              f"home: {_quoted(source)}",
              "sources:",
              f"  - {_quoted(source)}",
              f"icon: {_quoted(f'{source}/raw/{ref}/charts/workload-webhook/icon.svg')}"]
    return "\n".join(lines) + "\n"


def stamp_values_yaml(text: str, source: str, ref: str, registry: str, repository: str, digest: str,
                      path: str) -> str:
    lines = text.splitlines()
    set_value(lines, "image", "registry", registry, path)
    set_value(lines, "image", "repository", repository, path)
    set_value(lines, "image", "digest", digest, path)
    set_value(lines, "prometheusRule", "runbookBaseURL", f"{source}/blob/{ref}/docs/operations.md", path)
    return "\n".join(lines) + "\n"


def _check(args: argparse.Namespace) -> None:
    for flag, value, pattern in (("--source-url", args.source_url, SOURCE), ("--ref", args.ref, REF),
                                 ("--registry", args.registry, re.compile(r"[a-z0-9.-]+(:[0-9]+)?")),
                                 ("--repository", args.repository, NAME), ("--digest", args.digest, DIGEST)):
        if not pattern.fullmatch(value):
            raise StampError(f"{flag} {value!r} is not a valid value (expected {pattern.pattern})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chart", help="the chart directory to stamp in place (a copy, or the release's checkout)")
    parser.add_argument("--source-url", required=True, help="the repository: https://github.com/OWNER/REPO")
    parser.add_argument("--ref", required=True, help="what the links point at: the release tag v<version>")
    parser.add_argument("--registry", required=True, help="the image's registry, e.g. ghcr.io")
    parser.add_argument("--repository", required=True, help="the image's repository, e.g. owner/workload-webhook")
    parser.add_argument("--digest", required=True, help="the image's digest, sha256:<64 hex>")
    args = parser.parse_args(argv)
    chart_path = os.path.join(args.chart, "Chart.yaml")
    values_path = os.path.join(args.chart, "values.yaml")
    try:
        _check(args)
        source = args.source_url.rstrip("/")
        with open(chart_path, encoding="utf-8") as f:
            chart = stamp_chart_yaml(f.read(), source, args.ref, chart_path)
        with open(values_path, encoding="utf-8") as f:
            values = stamp_values_yaml(f.read(), source, args.ref, args.registry, args.repository, args.digest,
                                       values_path)
    except (StampError, OSError) as exc:
        print(f"stamp-release: {exc}", file=sys.stderr)
        return 2
    with open(chart_path, "w", encoding="utf-8") as f:
        f.write(chart)
    with open(values_path, "w", encoding="utf-8") as f:
        f.write(values)
    print(f"stamped {args.chart}: {source} at {args.ref}, image {args.registry}/{args.repository}@{args.digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
