#!/usr/bin/env bash
# Build, without any container registry, the images the real-node e2e runs
# (tests/e2e/node.py, tests/e2e/test_chart_node.py):
#   base     Debian bookworm by debootstrap (minbase + python3, its venv module, binutils,
#            CA certificates): the Dockerfile's build stage, as debian:bookworm-slim plus
#            those packages is in the release workflow
#   pause    FROM scratch, the static binary of hack/pause (containerd's sandbox_image)
#   webhook  the repository's Dockerfile on that base (--build-arg BASE_IMAGE),
#            tagged docker.io/library/workload-webhook:<chart appVersion>; its size is
#            printed (uncompressed and gzip; the goal is at most 150 MB uncompressed)
#
# Output: ${WW_CACHE:-~/.cache/workload-webhook}/images/, each keyed by a content hash:
#   base-<h>.tar (rootfs), pause-<h>.tar and webhook-<h>.tar (docker-archive).
# The webhook image is rebuilt when webhook/, schemas/, pyproject.toml,
# constraints.txt, the Dockerfile, hack/image-rootfs.sh or the base change, and reused otherwise.
# (README.md is copied into the build context, as the Dockerfile wants, but is not in
# the key: it changes with most commits and only reaches the wheel's metadata.)
# Progress goes to stderr; stdout ends with four KEY=VALUE lines (the inputs of
# `ctr -n k8s.io images import` and the names the images carry):
#   PAUSE_IMAGE=localhost/workload-webhook-pause:<h>      PAUSE_ARCHIVE=/…/pause-<h>.tar
#   WEBHOOK_IMAGE=docker.io/library/workload-webhook:<v>  WEBHOOK_ARCHIVE=/…/webhook-<h>.tar
#
# Needs root and Debian's apt: installs containerd, runc, containernetworking-plugins,
# iptables, debootstrap, buildah and podman when missing (`apt-get update` once first).
# The Debian mirror for debootstrap is read at run time from the machine's apt
# configuration (/etc/apt/sources.list.d/*.sources or /etc/apt/sources.list); pip
# inside the build uses the machine's pip settings (`pip config list`) and its CA
# bundle, mounted read-only. No host name is written anywhere in the repository.
# Env knobs: WW_CACHE (cache root), WW_FORCE=1 (rebuild all three).
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
cache_root="${WW_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/workload-webhook}"
img_dir="${cache_root}/images"
ca_bundle=/etc/ssl/certs/ca-certificates.crt
base_packages="python3,python3-venv,binutils,ca-certificates"
debs=(containerd runc containernetworking-plugins iptables debootstrap buildah podman)

log() { printf '[build-images] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
sha() { sha256sum | cut -c1-12; }
force() { [[ "${WW_FORCE:-0}" == 1 ]]; }

[[ "$(id -u)" == 0 ]] || die "needs root (debootstrap, buildah, containerd)"
mkdir -p "${img_dir}"
exec 9>"${img_dir}/.lock"
flock 9

# --- Debian packages ------------------------------------------------------------
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q 'install ok installed' || missing+=("${p}")
done
if ((${#missing[@]})); then
  t="$(now)"
  log "step: apt-get install ${missing[*]}"
  apt-get update -q >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 \
    || die "apt-get install ${missing[*]} failed"
  log "done: packages in $(elapsed "${t}")"
fi

# --- the Debian mirror, from the machine's apt configuration ---------------------
debian_mirror() {
  local f
  # deb822: the first URI of a stanza whose Suites name bookworm itself (not -security).
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "${f}" ]] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
      { uri = ""; ok = 0; deb = 0
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:/ && $i ~ /[ \t]deb([ \t]|$)/) deb = 1
          if ($i ~ /^URIs:/) { split($i, u, /[ \t]+/); uri = u[2] }
          if ($i ~ /^Suites:/ && $i ~ /[ \t]bookworm([ \t]|$)/) ok = 1
        }
        if (deb && ok && uri != "") { print uri; exit } }' "${f}"
  done | head -n1 | grep . && return 0
  # one-line format: deb [options] URI bookworm components...
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "${f}" ]] || continue
    sed -E 's/\[[^]]*\]//' "${f}" | awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }'
  done | head -n1 | grep .
}

# --- (a) base: debootstrap rootfs -> containers-storage ---------------------------
base_key="$(printf 'bookworm minbase %s v2\n' "${base_packages}" | sha)"
base_tar="${img_dir}/base-${base_key}.tar"
base_image="localhost/workload-webhook-base:${base_key}"
if force || [[ ! -s "${base_tar}" ]]; then
  mirror="$(debian_mirror)" || die "no bookworm mirror found in the apt configuration"
  t="$(now)"
  root="${img_dir}/.base-rootfs"
  clear_root() {   # an interrupted debootstrap may leave /proc, /sys mounted inside
    awk -v r="${root}" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r \
      | xargs -r -n1 umount -l
    rm -rf "${root}"
  }
  clear_root
  log "step: debootstrap --variant=minbase bookworm (mirror from the apt configuration)"
  debootstrap --variant=minbase --include="${base_packages}" bookworm "${root}" "${mirror}" >&2 \
    || die "debootstrap failed (log: ${root}/debootstrap/debootstrap.log)"
  chroot "${root}" /usr/bin/python3.11 -c 'import ensurepip, venv' >&2 || die "the base's python3.11 has no venv"
  rm -rf "${root}"/var/cache/apt/archives/*.deb "${root}"/var/lib/apt/lists/* "${root}/debootstrap"
  : > "${root}/etc/apt/sources.list"   # the image names no mirror
  rm -f "${root}"/etc/apt/sources.list.d/*
  tar --numeric-owner -C "${root}" -cf "${base_tar}.tmp" .
  mv -f "${base_tar}.tmp" "${base_tar}"
  clear_root
  log "done: base in $(elapsed "${t}") ($(du -h "${base_tar}" | cut -f1))"
  force && podman rmi -f "${base_image}" >/dev/null 2>&1 || true
fi
if ! podman image exists "${base_image}"; then
  log "step: podman import ${base_image}"
  podman import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' "${base_tar}" "${base_image}" >&2 \
    || die "podman import of the base failed"
fi

# --- (b) pause: a static Go binary FROM scratch -----------------------------------
pause_key="$(cat "${script_dir}/pause/main.go" "${script_dir}/pause/go.mod" | sha)"
pause_tar="${img_dir}/pause-${pause_key}.tar"
pause_image="localhost/workload-webhook-pause:${pause_key}"
if force || [[ ! -s "${pause_tar}" ]]; then
  command -v go >/dev/null 2>&1 || die "the go command is not on PATH (builds hack/pause)"
  t="$(now)"
  ctx="$(mktemp -d)"
  log "step: go build hack/pause (CGO_ENABLED=0)"
  CGO_ENABLED=0 go build -C "${script_dir}/pause" -trimpath -ldflags='-s -w' -o "${ctx}/pause" . \
    || die "go build hack/pause failed"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "${ctx}/Containerfile"
  buildah bud --isolation chroot --network host -f "${ctx}/Containerfile" -t "${pause_image}" "${ctx}" >&2 \
    || die "buildah bud (pause) failed"
  rm -f "${pause_tar}.tmp"
  buildah push "${pause_image}" "docker-archive:${pause_tar}.tmp:${pause_image}" >&2 || die "export of pause failed"
  mv -f "${pause_tar}.tmp" "${pause_tar}"
  buildah rmi "${pause_image}" >/dev/null 2>&1 || true     # the archive is the cache
  find "${img_dir}" -maxdepth 1 -name 'pause-*.tar' ! -name "${pause_tar##*/}" -delete
  rm -rf "${ctx}"
  log "done: pause in $(elapsed "${t}")"
fi

# --- (c) webhook: the repository's Dockerfile on the base -------------------------
app_version="$(awk -F'"' '/^appVersion:/ { print $2 }' "${repo_root}/charts/workload-webhook/Chart.yaml")"
[[ -n "${app_version}" ]] || die "no appVersion in charts/workload-webhook/Chart.yaml"
webhook_image="docker.io/library/workload-webhook:${app_version}"
cd "${repo_root}"
inputs() {   # what the image is made of: the build context, minus caches
  find webhook schemas -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print
  printf '%s\n' pyproject.toml constraints.txt Dockerfile hack/image-rootfs.sh
}
webhook_key="$( { echo "base ${base_key} ${webhook_image}"; inputs | LC_ALL=C sort | xargs sha256sum; } | sha)"
webhook_tar="${img_dir}/webhook-${webhook_key}.tar"
if force || [[ ! -s "${webhook_tar}" ]]; then
  t="$(now)"
  ctx="$(mktemp -d)"
  { inputs; echo README.md; } | tar -cf - -T - | tar -C "${ctx}" -xf -   # a clean context: the key's files + README
  # pip inside the build: the machine's settings (index, timeouts, ...) in a pip.conf
  # mounted read-only, the machine's CA bundle mounted over the base's.
  pip_conf="${ctx}.pip.conf"
  {
    echo "[global]"
    echo "cert = ${ca_bundle}"
    keys='index-url|extra-index-url|trusted-host|default-timeout|timeout|retries|proxy'
    python3 -m pip config list 2>/dev/null \
      | sed -nE "s/^(global|install|:env:)\.(${keys})='(.*)'$/\2 = \3/p" | awk -F' = ' '!seen[$1]++'
  } > "${pip_conf}"
  # Built under a name of this build's own (two builds of one appVersion never push each
  # other's image); the archive carries the name the chart asks for.
  build_tag="localhost/workload-webhook-build:${webhook_key}"
  # The image's times: the last commit's (SOURCE_DATE_EPOCH, as the release workflow sets it).
  epoch="${SOURCE_DATE_EPOCH:-$(git -C "${repo_root}" log -1 --format=%ct 2>/dev/null || echo 0)}"
  log "step: buildah bud ${webhook_image} (Dockerfile, BASE_IMAGE=${base_image}, SOURCE_DATE_EPOCH=${epoch})"
  buildah bud --isolation chroot --network host --pull=false --layers=false --timestamp "${epoch}" \
    --build-arg "BASE_IMAGE=${base_image}" --build-arg "SOURCE_DATE_EPOCH=${epoch}" \
    --volume "${ca_bundle}:${ca_bundle}:ro" --volume "${pip_conf}:/etc/pip.conf:ro" \
    -f "${ctx}/Dockerfile" -t "${build_tag}" "${ctx}" >&2 || die "buildah bud (webhook) failed"
  rm -f "${webhook_tar}.tmp"
  buildah push "${build_tag}" "docker-archive:${webhook_tar}.tmp:${webhook_image}" >&2 \
    || die "export of the webhook image failed"
  mv -f "${webhook_tar}.tmp" "${webhook_tar}"
  buildah rmi "${build_tag}" >/dev/null 2>&1 || true   # the archive is the cache
  find "${img_dir}" -maxdepth 1 -name 'webhook-*.tar' ! -name "${webhook_tar##*/}" -delete
  rm -rf "${ctx}" "${pip_conf}"
  log "done: webhook image in $(elapsed "${t}")"
else
  log "cached: ${webhook_tar}"
fi
# The image's size: its layers as the node unpacks them, and gzip-compressed as a registry
# stores them; measured once per build (the .size file beside the archive).
size_file="${webhook_tar%.tar}.size"
if [[ ! -s "${size_file}" || "${size_file}" -ot "${webhook_tar}" ]]; then
  python3 - "${webhook_tar}" > "${size_file}" <<'PY' || die "cannot measure ${webhook_tar}"
import gzip, json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    layers = json.load(t.extractfile("manifest.json"))[0]["Layers"]
    raw = sum(t.getmember(name).size for name in layers)
    packed = sum(len(gzip.compress(t.extractfile(name).read(), 6, mtime=0)) for name in layers)
print(raw, packed)
PY
  find "${img_dir}" -maxdepth 1 -name 'webhook-*.size' ! -name "${size_file##*/}" -delete
fi
read -r raw packed < "${size_file}"
awk -v r="${raw}" -v p="${packed}" 'BEGIN { printf "[build-images] webhook image: %.1f MB uncompressed (the goal: at most 150 MB), %.1f MB gzip-compressed\n", r / 1e6, p / 1e6 }' >&2

echo "PAUSE_IMAGE=${pause_image}"
echo "PAUSE_ARCHIVE=${pause_tar}"
echo "WEBHOOK_IMAGE=${webhook_image}"
echo "WEBHOOK_ARCHIVE=${webhook_tar}"
