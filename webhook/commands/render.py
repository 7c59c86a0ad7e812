"""`workload-webhook render -f OBJ…`: for each target object (a configured target or
profile's kind, or a batch/v1 Job), the Workload and the CompositePodGroups and
PodGroups an operator should create for it, built by webhook.builder; or, when the
webhook would deny the object, its errors at the object's own paths. Exit codes as
`validate`: 0 rendered (an object that is no target is only noted), 1 an object is denied,
2 usage or input errors."""
from __future__ import annotations

import argparse
import json
import sys

import yaml

from webhook import engine
from webhook.builder.targets import render
from webhook.builder.types import BuildError
from webhook.command_input import EXIT_USAGE, EXIT_VIOLATION, config_args, filename_args, load_all, load_config, objects


def add_parser(subparsers) -> argparse.ArgumentParser:
    r = subparsers.add_parser("render", help="print the Workload, CompositePodGroups and PodGroups a target object "
                                             "should get (webhook.builder), or why it cannot")
    filename_args(r, "the target objects")
    config_args(r)
    r.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml",
                   help="YAML documents, or one JSON List")
    r.set_defaults(func=run)
    return r


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.profile)
    loaded = load_all(args.filename)
    if loaded is None:
        return EXIT_USAGE
    found, status = objects(loaded[0])
    rendered_objects = []
    for doc, kind, ident in found:
        verdict = engine.validate(engine.Request.for_object(doc.obj), cfg, scope="cli")
        if not verdict.allowed:
            for e in verdict.errors:
                print(f"{doc.file}: {kind} {ident}: {e}", file=sys.stderr)
            status = EXIT_VIOLATION
            continue
        try:
            rendered = render(doc.obj, cfg)
        except BuildError as exc:
            print(f"{doc.file}: {kind} {ident}: cannot build: {exc}", file=sys.stderr)
            status = EXIT_VIOLATION
            continue
        if rendered is None:
            print(f"{doc.file}: {kind} {ident}: not a target: nothing to render", file=sys.stderr)
            continue
        if rendered.note:
            print(f"{doc.file}: {kind} {ident}: {rendered.note}", file=sys.stderr)
        rendered_objects += rendered.objects
    if args.output == "json":
        json.dump({"apiVersion": "v1", "kind": "List", "items": rendered_objects}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif rendered_objects:
        yaml.safe_dump_all(rendered_objects, sys.stdout, sort_keys=False)
    return status
