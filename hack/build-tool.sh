#!/usr/bin/env bash
# Build one pinned Go tool of hack/tools.txt from the Go module proxy, cached outside the
# repo (${WW_CACHE:-~/.cache/workload-webhook}/tools/NAME-VERSION/NAME), once; its path is
# the last (only) line on stdout:  PROMTOOL="$(hack/build-tool.sh promtool)"
#   kubeconform  the target-schema tests (tests/e2e/test_target_schemas.py)
#   promtool     the chart's alerting rules (`promtool check rules`, `promtool test rules`);
#                built without Prometheus' service-discovery plugins (tag remove_all_sd)
#   actionlint   the release workflow (.github/workflows)
set -euo pipefail
name="${1:?usage: hack/build-tool.sh NAME (see hack/tools.txt)}"
list="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/tools.txt"
read -r package version tags < <(awk -v n="${name}" '$1 == n { print $2, $3, $4 }' "${list}") \
  || { echo "[build-tool] ${name}: not in hack/tools.txt" >&2; exit 1; }
cache="${WW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/workload-webhook}/tools/${name}-${version}"
if [[ ! -x "${cache}/${name}" ]]; then
  command -v go >/dev/null 2>&1 || { echo "[build-tool] the go command is not on PATH" >&2; exit 1; }
  mkdir -p "${cache}"
  start=$(date +%s)
  [[ "${tags}" == - ]] && tags=""
  GOBIN="${cache}" GOFLAGS=-mod=mod go install -tags="${tags}" "${package}@${version}" >&2
  echo "[build-tool] ${name} ${version} built in $(( $(date +%s) - start ))s" >&2
fi
echo "${cache}/${name}"
