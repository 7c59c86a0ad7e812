"""The command line: one module per command (webhook/commands/, each with
`add_parser(subparsers)` and `run(args) -> int`), assembled here in the order
`--help` lists them. Exit codes (docs/cli.md): 0 fine; 1 the answer is no (a
violation or denial, a release not admitting, the object asked about not there); 2 a
usage, config, input or cluster error."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from webhook import config as config_mod
from webhook.command_input import EXIT_OK, EXIT_USAGE, exit_now, package_version
from webhook.commands import (audit, certs, check, completion, explain, mutate, render, schemas, serve, validate, vap,
                              webhook_configs)

COMMANDS = (
    validate,
    mutate,
    serve,
    certs,
    webhook_configs,
    audit,
    check,
    vap,
    schemas,
    explain,
    render,
    completion,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workload-webhook",
                                     description="Admission webhook for Kubernetes 1.37 Workload-Aware Scheduling")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    parser.set_defaults(parser=parser)           # `completion` walks the whole parser
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:          # argparse: 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        code = args.func(args)
    except config_mod.ConfigError as exc:     # the configuration file, a profile, a server setting
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:
        return int(exc.code or 0)
    except BrokenPipeError:
        return EXIT_OK
    if argv is None and getattr(args, "exit_without_teardown", False):   # the process itself, not a test
        exit_now(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
