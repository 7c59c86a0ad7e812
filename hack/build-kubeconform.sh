#!/usr/bin/env bash
# kubeconform (github.com/yannh/kubeconform), pinned in hack/tools.txt, for the target-schema
# tests (tests/e2e/test_target_schemas.py); the binary's path is the last (only) line on stdout.
exec "$(dirname "${BASH_SOURCE[0]}")/build-tool.sh" kubeconform
