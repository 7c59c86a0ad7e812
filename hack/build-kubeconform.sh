#!/usr/bin/env bash
# kubeconform (github.com/yannh/kubeconform), pinned, from the Go module proxy, for the
# target-schema tests (tests/e2e/test_target_schemas.py). Cached outside the repo;
# the binary's path is the last (only) line on stdout:  KC="$(hack/build-kubeconform.sh)"
set -euo pipefail
version="v0.7.0"
cache="${WW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/workload-webhook}/tools/kubeconform-${version}"
if [[ ! -x "${cache}/kubeconform" ]]; then
  command -v go >/dev/null 2>&1 || { echo "[build-kubeconform] the go command is not on PATH" >&2; exit 1; }
  mkdir -p "${cache}"
  GOBIN="${cache}" GOFLAGS=-mod=mod go install "github.com/yannh/kubeconform/cmd/kubeconform@${version}" >&2
fi
echo "${cache}/kubeconform"
