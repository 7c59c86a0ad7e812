#!/usr/bin/env bash
# Build the differential test's oracle (hack/oracle: upstream's workloadbuilder and batch/v1
# Job validation, pinned by hack/oracle/go.mod + go.sum to the control plane's Kubernetes)
# from the Go module cache the control-plane build fills (the proxy for anything missing).
#
# Output: ${WW_CACHE:-~/.cache/workload-webhook}/oracle/<k8s-version>-<hash>/workload-oracle,
#   where <hash> = first 12 hex chars of sha256 over hack/oracle's go.mod, go.sum and *.go.
# Skipped when that binary exists. Its path is the last (only) line on stdout:
#   ORACLE="$(hack/build-oracle.sh)"
#   hack/build-oracle.sh --path     prints the path without building (the test's lookup)
# Env knobs: WW_CACHE (cache root), WW_FORCE=1 (rebuild).
set -euo pipefail

mod_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/oracle" && pwd)"
log() { printf '[build-oracle] %s\n' "$*" >&2; }

k8s_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit }' "${mod_dir}/go.mod")"
hash="$(cat "${mod_dir}/go.mod" "${mod_dir}/go.sum" "${mod_dir}"/*.go | sha256sum | cut -c1-12)"
cache_root="${WW_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/workload-webhook}"
out_dir="${cache_root}/oracle/${k8s_version}-${hash}"
binary="${out_dir}/workload-oracle"

if [[ "${1:-}" == --path ]]; then
  echo "${binary}"
  exit 0
fi
if [[ "${WW_FORCE:-0}" != 1 && -x "${binary}" ]]; then
  log "cached: ${binary}"
  echo "${binary}"
  exit 0
fi
command -v go >/dev/null 2>&1 || { log "ERROR: the go command is not on PATH"; exit 1; }
mkdir -p "${out_dir}"
start="$(date +%s)"
log "go build (kubernetes ${k8s_version}, $(go env GOVERSION)) -> ${binary}"
# The same flags as the control-plane build, so its compiled packages in GOCACHE are reused.
(cd "${mod_dir}" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags="-s -w" -o "${binary}.tmp" .) \
  || { log "ERROR: go build failed"; exit 1; }
mv -f "${binary}.tmp" "${binary}"
log "built in $(( $(date +%s) - start ))s"
echo "${binary}"
