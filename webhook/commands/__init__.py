"""The command line's commands, one module each. A command module has two functions:

- `add_parser(subparsers)`: its sub-parser, its flags, and `set_defaults(func=run)`;
- `run(args) -> int`: the command, returning its exit code (docs/cli.md).

webhook/cli.py lists the modules in the order `--help` shows them and maps the common
errors (a bad configuration, a closed pipe) to exit codes; what several commands share
(the configuration flags, reading manifests, the exit codes) is webhook/command_input.py.
A module imports what its command needs inside `run`: the CLI imports every command
module to build its parser, so each start costs only argparse."""
