#!/usr/bin/env bash
# Build a real Kubernetes control plane (kube-apiserver, kube-scheduler, kube-controller-manager,
# kubelet, kubectl, etcd, helm) from
# the Go module proxy, pinned by hack/controlplane/go.mod + go.sum.
#
# Output: ${WW_CACHE:-~/.cache/workload-webhook}/controlplane/<k8s-version>-<hash>/bin/
#   where <hash> = first 12 hex chars of sha256(go.mod + go.sum).
# The build is skipped when all the binaries already exist there.
# Progress and timings go to stderr; the bin dir is the last (only) line on stdout:
#   BIN="$(hack/build-control-plane.sh)"
#
# Needs only the go command and access to the Go module proxy. Existing
# GOMODCACHE / GOCACHE / GOPROXY settings are honoured (not overridden).
# Env knobs:
#   WW_CACHE        cache root (default ${XDG_CACHE_HOME:-~/.cache}/workload-webhook: outside
#                   the repo, so every clone on the machine, CI included, reuses it)
#   WW_GOTOOLCHAIN  toolchain to fetch if the local go is older than go.mod's go
#                   line (default go1.26.8); ignored when the local go is new enough
#   WW_FORCE=1      rebuild even if the binaries exist
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
mod_dir="${script_dir}/controlplane"

log() { printf '[build-control-plane] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

command -v go >/dev/null 2>&1 || die "the go command is not on PATH"
[[ -f "${mod_dir}/go.mod" && -f "${mod_dir}/go.sum" ]] || die "missing ${mod_dir}/go.mod or go.sum"

# --- versions pinned in go.mod (read without touching the network) ------------
modver() { awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "${mod_dir}/go.mod"; }
k8s_version="$(modver k8s.io/kubernetes)"
etcd_version="$(modver go.etcd.io/etcd/server/v3)"
helm_version="$(modver helm.sh/helm/v3)"
[[ -n "${k8s_version}" && -n "${etcd_version}" && -n "${helm_version}" ]] \
  || die "could not read k8s.io/kubernetes / etcd server / helm versions from go.mod"

hash="$(cat "${mod_dir}/go.mod" "${mod_dir}/go.sum" | sha256sum | cut -c1-12)"
cache_root="${WW_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/workload-webhook}"
out_dir="${cache_root}/controlplane/${k8s_version}-${hash}"
bin_dir="${out_dir}/bin"

binaries=(kube-apiserver kube-scheduler kube-controller-manager kubelet kubectl etcd helm)
declare -A pkg=(
  [kube-apiserver]="k8s.io/kubernetes/cmd/kube-apiserver"
  [kube-scheduler]="k8s.io/kubernetes/cmd/kube-scheduler"
  [kube-controller-manager]="k8s.io/kubernetes/cmd/kube-controller-manager"
  [kubelet]="k8s.io/kubernetes/cmd/kubelet"
  [kubectl]="k8s.io/kubernetes/cmd/kubectl"
  [etcd]="go.etcd.io/etcd/server/v3"
  [helm]="helm.sh/helm/v3/cmd/helm"
)

all_present() {
  local b
  for b in "${binaries[@]}"; do [[ -x "${bin_dir}/${b}" ]] || return 1; done
}

if [[ "${WW_FORCE:-0}" != 1 ]] && all_present; then
  log "cached: all binaries present in ${bin_dir} (kubernetes ${k8s_version}, etcd ${etcd_version}, helm ${helm_version}); nothing to do"
  echo "${bin_dir}"
  exit 0
fi

mkdir -p "${bin_dir}"

# Serialise concurrent builds into the same cache dir (flock is optional).
if command -v flock >/dev/null 2>&1; then
  exec 9>"${out_dir}/.lock"
  log "waiting for lock ${out_dir}/.lock"
  flock 9
  if [[ "${WW_FORCE:-0}" != 1 ]] && all_present; then
    log "cached (built by a concurrent run): ${bin_dir}"
    echo "${bin_dir}"
    exit 0
  fi
fi

# --- Go toolchain ---------------------------------------------------------------
go_line="$(awk '$1 == "go" { print $2; exit }' "${mod_dir}/go.mod")"
local_go="$(go env GOVERSION)"; local_go="${local_go#go}"
if [[ "$(printf '%s\n%s\n' "${go_line}" "${local_go}" | sort -V | head -n1)" != "${go_line}" ]]; then
  export GOTOOLCHAIN="${WW_GOTOOLCHAIN:-go1.26.8}"
  log "local go ${local_go} is older than go.mod's go ${go_line}: using GOTOOLCHAIN=${GOTOOLCHAIN} (fetched from the module proxy)"
fi
go_version="$(cd "${mod_dir}" && go env GOVERSION)"

export CGO_ENABLED=0   # static binaries, as upstream builds its server binaries
log "kubernetes ${k8s_version}, etcd ${etcd_version}, helm ${helm_version}, ${go_version} $(go env GOOS)/$(go env GOARCH)"
log "output: ${bin_dir}"
log "GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE) GOPROXY=$(go env GOPROXY)"

total_start="$(now)"

# --- download modules -------------------------------------------------------------
t="$(now)"
log "step: go mod download (module cache)"
(cd "${mod_dir}" && go mod download) || die "go mod download failed"
log "done: go mod download in $(elapsed "${t}")"

# --- ldflags ------------------------------------------------------------------------
k8s_minor="${k8s_version#v}"; k8s_major="${k8s_minor%%.*}"; k8s_minor="${k8s_minor#*.}"; k8s_minor="${k8s_minor%%.*}"
cv="k8s.io/component-base/version"
k8s_ldflags="-s -w -X ${cv}.gitVersion=${k8s_version} -X ${cv}.gitMajor=${k8s_major} -X ${cv}.gitMinor=${k8s_minor} -X ${cv}.gitTreeState=clean -X ${cv}.gitCommit="
hv="helm.sh/helm/v3"
helm_ldflags="-s -w -X ${hv}/internal/version.version=${helm_version} -X ${hv}/internal/version.gitTreeState=clean -X ${hv}/pkg/chartutil.k8sVersionMajor=${k8s_major} -X ${hv}/pkg/chartutil.k8sVersionMinor=${k8s_minor} -X ${hv}/pkg/lint/rules.k8sVersionMajor=${k8s_major} -X ${hv}/pkg/lint/rules.k8sVersionMinor=${k8s_minor}"
declare -A ldflags=(
  [kube-apiserver]="${k8s_ldflags}"
  [kube-scheduler]="${k8s_ldflags}"
  [kube-controller-manager]="${k8s_ldflags}"
  [kubelet]="${k8s_ldflags}"
  [kubectl]="${k8s_ldflags}"
  [etcd]="-s -w"
  [helm]="${helm_ldflags}"
)

# --- build ------------------------------------------------------------------------
declare -A took=()
for b in "${binaries[@]}"; do
  if [[ "${WW_FORCE:-0}" != 1 && -x "${bin_dir}/${b}" ]]; then
    took[$b]="cached"       # a binary added to the list later is built alone
    continue
  fi
  t="$(now)"
  log "step: go build ${pkg[$b]} -> ${bin_dir}/${b}"
  tmp="${bin_dir}/.${b}.tmp"
  rm -f "${tmp}"
  (cd "${mod_dir}" && go build -mod=readonly -trimpath -ldflags="${ldflags[$b]}" -o "${tmp}" "${pkg[$b]}") \
    || die "go build ${pkg[$b]} failed"
  mv -f "${tmp}" "${bin_dir}/${b}"
  took[$b]="$(elapsed "${t}")"
  log "done: ${b} in ${took[$b]} ($(du -h "${bin_dir}/${b}" | cut -f1))"
done

# --- versions.txt -------------------------------------------------------------------
{
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "go.mod+go.sum sha256 prefix: ${hash}"
  echo "go: ${go_version} $(go env GOOS)/$(go env GOARCH) CGO_ENABLED=${CGO_ENABLED}"
  echo "k8s.io/kubernetes: ${k8s_version}"
  echo "go.etcd.io/etcd/server/v3: ${etcd_version}"
  echo "helm.sh/helm/v3: ${helm_version}"
  for b in "${binaries[@]}"; do echo "build time ${b}: ${took[$b]}"; done
  echo "--- kube-apiserver --version"; "${bin_dir}/kube-apiserver" --version 2>&1 || true
  echo "--- kube-scheduler --version"; "${bin_dir}/kube-scheduler" --version 2>&1 || true
  echo "--- kubectl version --client"; "${bin_dir}/kubectl" version --client 2>&1 || true
  echo "--- etcd --version"; "${bin_dir}/etcd" --version 2>&1 || true
  echo "--- helm version"; "${bin_dir}/helm" version 2>&1 || true
} > "${bin_dir}/versions.txt"

log "wrote ${bin_dir}/versions.txt"
log "total: $(elapsed "${total_start}")"
echo "${bin_dir}"
