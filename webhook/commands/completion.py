"""`completion bash|zsh|fish`: a shell completion script generated from the whole
parser (webhook/completion.py walks it). Exit codes: 0 printed, 2 a shell it does not know."""
from __future__ import annotations

import argparse

from webhook.command_input import EXIT_OK


def add_parser(subparsers) -> argparse.ArgumentParser:
    from webhook.completion import SHELLS
    c = subparsers.add_parser("completion", help="print a shell completion script: bash, zsh or fish")
    c.add_argument("shell", choices=SHELLS)
    c.set_defaults(func=run)
    return c


def run(args: argparse.Namespace) -> int:
    from webhook.completion import script
    print(script(args.shell, args.parser), end="")     # args.parser: the whole parser, set by webhook/cli.py
    return EXIT_OK
