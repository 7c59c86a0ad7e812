"""`workload-webhook validate`, the CI gate: the command (command.py), what it judges,
skips or leaves (coverage.py), and its output formats (output/)."""
