#!/usr/bin/env bash
# The real node's NetworkPolicy enforcer (tests/e2e/node.py, tests/e2e/test_chart_node_netpol.py):
# kube-router's network-policy controller, pinned in hack/tools.txt and built with
# hack/build-tool.sh, and Debian's ipset, which it runs beside iptables (installed when missing;
# needs root and apt). The binary's path is the last (only) line on stdout.
# (kube-network-policies, the upstream reference, needs the nftables `queue` expression, which a
# kernel built without CONFIG_NFT_QUEUE lacks: see docs/testing.md.)
set -euo pipefail
if ! command -v ipset >/dev/null 2>&1; then
  [[ "$(id -u)" == 0 ]] || { echo "[build-network-policy] ipset is missing and only root can install it" >&2; exit 1; }
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ipset >&2
fi
exec "$(dirname "${BASH_SOURCE[0]}")/build-tool.sh" kube-router
