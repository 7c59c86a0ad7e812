"""`mutate`: a Pod or target object as the mutating webhook would change it, on files.
Exit codes: 0 mutated, 1 denied (or not an object), 2 an input that cannot be read."""
from __future__ import annotations

import argparse
import json
import sys

from webhook.command_input import EXIT_USAGE, EXIT_VIOLATION, config_args, filename_args, load_all, load_config, objects


def add_parser(subparsers) -> argparse.ArgumentParser:
    m = subparsers.add_parser("mutate", help="print a Pod or target object as the mutating webhook would change it")
    filename_args(m, "the Pods or target objects to mutate")
    m.add_argument("--context", action="append", metavar="PATH",
                   help="PodGroups and Workloads that stand for the cluster; repeatable")
    config_args(m)
    m.add_argument("-o", "--output", choices=("yaml", "json", "patch"), default="yaml",
                   help="the mutated object (yaml or json), or only the JSON Patch")
    m.set_defaults(func=run)
    return m


def run(args: argparse.Namespace) -> int:
    import yaml

    from webhook import engine
    from webhook.mutation.patch import apply
    from webhook.view import StaticView
    cfg = load_config(args.config, args.profile)
    loaded = load_all(args.filename, args.context)
    if loaded is None:
        return EXIT_USAGE
    docs, ctx_docs = loaded
    view = StaticView([d.obj for d in ctx_docs], authoritative=True)
    found, status = objects(docs)
    outputs = []
    for doc, kind, ident in found:
        verdict = engine.mutate(engine.Request.for_object(doc.obj), cfg, view, scope="cli")
        for w in [*map(str, verdict.warned), *verdict.warnings]:
            print(f"{doc.file}: {kind} {ident}: Warning: {w}", file=sys.stderr)
        for e in verdict.audits:
            print(f"{doc.file}: {kind} {ident}: Audit: {e}", file=sys.stderr)
        if not verdict.allowed:
            for e in verdict.errors:
                print(f"{doc.file}: {kind} {ident}: {e}", file=sys.stderr)
            status = EXIT_VIOLATION
            continue
        ops = verdict.patch or []
        outputs.append(ops if args.output == "patch" else apply(doc.obj, ops))
    if args.output == "yaml":
        yaml.safe_dump_all(outputs, sys.stdout, sort_keys=False)
    else:
        payload = outputs[0] if len(outputs) == 1 else outputs
        json.dump(payload, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return status
