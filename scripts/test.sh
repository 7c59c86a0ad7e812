#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs the package with its test
# extras, then runs pytest. Extra arguments go to pytest (e.g. `-m "not e2e"`).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'

status=0
python3 -m pytest "$@" || status=$?
# pytest's 5 means "no tests collected": never a pass.
exit "$status"
