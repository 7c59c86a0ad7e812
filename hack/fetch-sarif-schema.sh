#!/usr/bin/env bash
# The SARIF 2.1.0 JSON Schema (the final "rtm.5" schema of the OASIS standard), as the npm
# package @microsoft/jest-sarif ships it, for the test that validates `validate -o sarif`
# (tests/unit/test_cli_output.py). Cached outside the repo; the schema file's path is the last
# (only) line on stdout:  SCHEMA="$(hack/fetch-sarif-schema.sh)"
set -euo pipefail
package="@microsoft/jest-sarif" version="1.0.0-beta.0" member="package/lib/schemas/sarif-2.1.0-rtm.5.json"
cache="${WW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/workload-webhook}/tools/sarif-schema-${version}"
if [[ ! -s "${cache}/sarif-2.1.0.json" ]]; then
  command -v npm >/dev/null 2>&1 || { echo "[fetch-sarif-schema] the npm command is not on PATH" >&2; exit 1; }
  tmp="$(mktemp -d)"; trap 'rm -rf "${tmp}"' EXIT
  (cd "${tmp}" && npm pack --silent "${package}@${version}" >/dev/null)
  mkdir -p "${cache}"
  tar -xzf "${tmp}"/*.tgz -C "${tmp}" "${member}"
  mv "${tmp}/${member}" "${cache}/sarif-2.1.0.json.tmp" && mv "${cache}/sarif-2.1.0.json.tmp" "${cache}/sarif-2.1.0.json"
fi
echo "${cache}/sarif-2.1.0.json"
