#!/bin/sh
# Run by the Dockerfile's build stage (Debian bookworm, as root): install the service into a
# venv from the pinned closure and gather, into ROOTFS, the whole final image: the Debian
# packages the interpreter needs (no shell, apt, dpkg, pip or setuptools), the venv
# byte-compiled, its shared objects stripped, a passwd naming the non-root user 65532.
#   hack/image-rootfs.sh SRC ROOTFS      (SRC: pyproject.toml, constraints.txt, webhook/, schemas/)
# What is left out, and why:
#   - kubernetes.aio, the client's asyncio twin (68 MB), and the packages only it needs
#     (aiohttp and its family): the service never imports them (the build below imports
#     every module of webhook/ in the final tree to prove it).
#   - the sources of kubernetes.client's generated API and model classes (32 MB): shipped
#     as bytecode alone, so a traceback through them names file and line without the text.
#   - documentation, man pages, locales, iconv modules (Python decodes on its own).
set -eu
src="${1:?usage: image-rootfs.sh SRC ROOTFS}"
rootfs="${2:?usage: image-rootfs.sh SRC ROOTFS}"
venv=/opt/workload-webhook
python=/usr/bin/python3.11
asyncio_only="aiohttp aiohttp-retry aiohappyeyeballs aiosignal frozenlist multidict propcache yarl"
build_tools="setuptools==84.2.1 wheel==0.48.0"   # pyproject's build-system, pinned

log() { printf '[image-rootfs] %s\n' "$*" >&2; }

# --- the venv: the pinned closure, then the service, with no build isolation --------------
log "venv ${venv} from ${src}/constraints.txt"
"${python}" -m venv "${venv}"
pip="${venv}/bin/python -m pip --no-cache-dir --disable-pip-version-check --no-input"
skip="$(echo ${asyncio_only} | tr ' ' '|')"
grep -E '^[A-Za-z0-9]' "${src}/constraints.txt" | grep -viE "^(${skip})==" > /tmp/runtime.txt
${pip} install --quiet --no-compile ${build_tools}
${pip} install --quiet --no-compile --no-deps --require-virtualenv -r /tmp/runtime.txt
${pip} install --quiet --no-compile --no-deps --no-build-isolation "${src}"
${pip} uninstall --quiet --yes setuptools wheel pip
site="$("${venv}/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
rm -rf "${site}/kubernetes/aio" "${site}/_distutils_hack" "${site}/distutils-precedence.pth" \
  "${venv}"/bin/activate* "${venv}"/bin/Activate.ps1
find "${venv}" -name __pycache__ -prune -exec rm -rf {} +
# Byte-compiled once here (the root filesystem is read-only at run time), hash-based so the
# bytes do not depend on file times; the generated client as bytecode alone (see above).
"${venv}/bin/python" -m compileall -q -j0 -f -b --invalidation-mode unchecked-hash \
  "${site}/kubernetes/client/api" "${site}/kubernetes/client/models"
find "${site}/kubernetes/client/api" "${site}/kubernetes/client/models" -name '*.py' -delete
"${venv}/bin/python" -m compileall -q -j0 -f --invalidation-mode unchecked-hash "${venv}"
find "${venv}" -type f \( -name '*.so' -o -name '*.so.*' \) -exec strip --strip-unneeded {} +

# --- the interpreter's Debian packages: the installed dependency closure of python3.11 -------
# Packages some depend on only to be installed (Pre-Depends: dpkg for multiarch, debconf for
# questions): none of them runs in the image.
install_time=" dpkg debconf perl-base "
closure() {   # closure PKG...: each installed package the given ones depend on, recursively
  seen=" "
  todo="$*"
  while [ -n "${todo}" ]; do
    set -- ${todo}
    p="$1"; shift; todo="$*"
    case "${seen}${install_time}" in *" ${p} "*) continue ;; esac
    seen="${seen}${p} "
    deps="$(dpkg-query -W -f='${Pre-Depends},${Depends}' "${p}" | tr ',' '\n' | sed -E 's/\([^)]*\)//g; s/:any//g')"
    # each dependency: its first alternative that is installed
    for alternatives in $(printf '%s\n' "${deps}" | tr -d ' ' | grep .); do
      for choice in $(printf '%s' "${alternatives}" | tr '|' ' '); do
        if dpkg-query -W -f='${Status}' "${choice}" 2>/dev/null | grep -q 'ok installed'; then
          todo="${todo} ${choice}"; break
        fi
      done
    done
  done
  printf '%s\n' ${seen}
}
packages="$(closure python3.11 | sort)"
log "packages: $(echo ${packages})"
mkdir -p "${rootfs}"
for link in bin lib lib32 lib64 libx32 sbin; do      # usrmerge: /lib -> usr/lib, ...
  if [ -L "/${link}" ]; then
    cp -P "/${link}" "${rootfs}/${link}"
    mkdir -p "${rootfs}/$(readlink "/${link}")"
  fi
done
{
  for p in ${packages}; do dpkg-query -L "${p}"; done \
    | grep -vE '^/usr/share/(doc|doc-base|man|info|locale|lintian|bug)(/|$)|/gconv(/|$)'
  find /usr/lib/python3.11 -name __pycache__        # Debian compiles the standard library at install
  echo /etc/ld.so.cache
  echo "${venv}"
} | while read -r path; do
  # the venv and the compiled standard library whole; of the packages, files and links
  # (their directories come with them)
  case "${path}" in
    "${venv}" | */__pycache__) printf '%s\n' "${path#/}" ;;
    *) if [ -L "${path}" ] || [ -f "${path}" ]; then printf '%s\n' "${path#/}"; fi ;;
  esac
done | sort -u > /tmp/rootfs.list
tar -C / -cf - -T /tmp/rootfs.list | tar -C "${rootfs}" --keep-directory-symlink -xf -

# --- what a process needs besides its files ------------------------------------------------
mkdir -p "${rootfs}/etc/ssl/certs" "${rootfs}/tmp"
# The CA bundle as update-ca-certificates writes it by default (Debian's package, all of
# Mozilla's), not the build machine's /etc/ssl/certs (which may be mounted over).
cat /usr/share/ca-certificates/mozilla/*.crt > "${rootfs}/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "${rootfs}/tmp"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin\n' \
  > "${rootfs}/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "${rootfs}/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "${rootfs}/etc/nsswitch.conf"
# Every module of the service imports in this very tree, as the image runs it.
PYTHONDONTWRITEBYTECODE=1 chroot "${rootfs}" /opt/workload-webhook/bin/python3 -c "import importlib, pkgutil, webhook
for m in pkgutil.walk_packages(webhook.__path__, 'webhook.'):
    if not m.name.endswith('.__main__'):
        importlib.import_module(m.name)"
log "rootfs: $(du -sh "${rootfs}" | cut -f1) ($(wc -l < /tmp/rootfs.list) paths); every module of webhook imports"
