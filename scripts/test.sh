#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs the package with its test
# extras, builds (or reuses) the real control plane and the real node's images for
# the end-to-end tests, then runs pytest. Extra arguments go to pytest (e.g. `tests/unit`).
#   WW_SKIP_E2E=1   skip the control-plane and image builds and the e2e tests (ignored when CI=true)
set -euo pipefail
cd "$(dirname "$0")/.."

# The kopf extra: the example operator's e2e runs it (never a runtime dependency).
python3 -m pip install --quiet --disable-pip-version-check -e '.[test,kopf]'

# zsh and fish: the unit tests run the completion scripts in them (bash is always there).
if ! command -v zsh >/dev/null || ! command -v fish >/dev/null; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends zsh fish >/dev/null
fi
# The SARIF 2.1.0 JSON Schema the unit tests validate `validate -o sarif` against (an npm package's).
hack/fetch-sarif-schema.sh >/dev/null

# Every tool the end-to-end tests need is built here, never inside a test (each script
# is cached outside the repo and instant once built; the tests call it again for the path).
setup() {   # setup WHAT COMMAND...
  local what="$1"
  shift
  if ! "$@" >/dev/null; then
    if [[ "${CI:-}" == true ]]; then
      echo "${what} failed: the end-to-end tests cannot run" >&2
      exit 1
    fi
    echo "${what} failed: the end-to-end tests will fail with its output (WW_SKIP_E2E=1 leaves them out)" >&2
  fi
}
if [[ "${CI:-}" == true || "${WW_SKIP_E2E:-0}" != 1 ]]; then
  # kube-apiserver, kube-scheduler, kube-controller-manager, kubelet, etcd, kubectl, helm from the
  # Go module proxy (~8-15 min cold on 2 cores).
  setup "control-plane build" hack/build-control-plane.sh
  # kubeconform, for the target-schema tests.
  setup "kubeconform build" hack/build-kubeconform.sh
  # promtool, for the chart's alerting rules and dashboard queries; actionlint, for the release
  # workflow (hack/tools.txt pins both; ~1-3 min each cold).
  setup "promtool build" hack/build-tool.sh promtool
  setup "actionlint build" hack/build-tool.sh actionlint
  # The differential test's oracle: upstream's workloadbuilder and batch/v1 Job validation, from
  # the module cache the control-plane build filled (~20 s once that build is cached).
  setup "oracle build" hack/build-oracle.sh
  # The real node's runtime and images: containerd, runc, the CNI plugins, buildah and
  # debootstrap from Debian's packages; a debootstrap base, the pause image and the
  # webhook image from the Dockerfile, no registry (~3 min cold).
  setup "image build" hack/build-images.sh
  # The real node's NetworkPolicy enforcer: kube-router's network-policy controller from the Go
  # module proxy, and Debian's ipset (~2 min cold).
  setup "NetworkPolicy enforcer build" hack/build-network-policy.sh
fi

# pytest exits 5 when it collected no test: that is a failure here too.
exec python3 -m pytest "$@"
