"""`schemas`: list the published JSON Schemas or print one; `--target KIND`: a configured
target's schema with its blocks at their paths (for editors and kubeconform).
Exit codes: 0 printed, 2 no such schema or target, or a bad configuration."""
from __future__ import annotations

import argparse
import json
import os
import sys

from webhook.command_input import EXIT_OK, EXIT_USAGE, config_args, load_config


def add_parser(subparsers) -> argparse.ArgumentParser:
    s = subparsers.add_parser("schemas", help="list the published JSON Schemas, or print one; --target: a target's "
                                              "schema")
    s.add_argument("name", nargs="?")
    s.add_argument("--target", metavar="KIND", help="the schema of a configured target or profile kind, blocks at their "
                                                   "paths (for editors and kubeconform)")
    config_args(s)
    s.add_argument("--out", metavar="DIR", help="with --target: write KIND_VERSION.json per served version "
                                                "(kubeconform's naming) instead of printing")
    s.set_defaults(func=run)
    return s


def run(args: argparse.Namespace) -> int:
    from webhook.schemas import all_schemas
    if args.target:
        return _target_schema(args)
    schemas = all_schemas()
    if not args.name:
        for name in sorted(schemas):
            print(name)
        return EXIT_OK
    if args.name not in schemas:
        print(f"error: no schema {args.name!r}; one of: {', '.join(sorted(schemas))}", file=sys.stderr)
        return EXIT_USAGE
    json.dump(schemas[args.name], sys.stdout, indent=2)
    sys.stdout.write("\n")
    return EXIT_OK


def _target_schema(args: argparse.Namespace) -> int:
    from webhook.target_schema import for_target
    cfg = load_config(args.config, args.profile)
    matches = [t for t in cfg.targets if args.target in (t.kind, f"{t.kind}.{t.group}")]
    if len(matches) != 1:
        known = ", ".join(f"{t.kind}.{t.group}" for t in cfg.targets) or "none (give --config or --profile)"
        why = "is configured twice: use KIND.GROUP" if matches else "is not a configured target"
        print(f"error: {args.target!r} {why}; targets: {known}", file=sys.stderr)
        return EXIT_USAGE
    target = matches[0]
    def denied(rule: str) -> bool:      # a rule relaxed to warn/audit must not fail an editor or kubeconform
        return cfg.enforcement.action(rule, target.kind, lambda: None, "cli") == "deny"
    schema = json.dumps(for_target(target, dis2=cfg.forbidAllWithBasic and denied("DIS-2"), owned=denied("TGT-6")),
                        indent=2) + "\n"
    if not args.out:
        sys.stdout.write(schema)
        return EXIT_OK
    # kubeconform's file naming for custom resources: {{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json
    os.makedirs(args.out, exist_ok=True)
    for version in target.versions or ("v1",):
        path = os.path.join(args.out, f"{target.kind.lower()}_{version}.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(schema)
        print(path)
    return EXIT_OK
