"""The real node's NetworkPolicy enforcer (tests/e2e/node.py): kube-router's network-policy
controller alone (no routing, no service proxy, no CNI configuration), built by
hack/build-network-policy.sh and run in the node's namespace with the admin kubeconfig.

It enforces with iptables (Debian's, nf_tables backend) and ipsets, in the node's namespace
only: the chains KUBE-ROUTER-{INPUT,FORWARD,OUTPUT}, KUBE-POD-FW-*, KUBE-NWPLCY-* and the
sets KUBE-SRC-*/KUBE-DST-*. Deleting the namespace (node_cleanup) removes them all.

A Pod selected by a policy gets a chain that admits its own node first (source address
type LOCAL: the kubelet's probes and the API server on this node), then the policies'
peers, and REJECTs the rest (the client sees "connection refused").

kube-network-policies, the upstream reference, was the first choice; it queues each new
connection's first packet to user space with the nftables ``queue`` expression, which this
kernel lacks (built without CONFIG_NFT_QUEUE, no loadable modules): its rules cannot load.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

NAME = "kube-router"
# Written by the controller's first full sync at the end of each of its top-level chains.
SYNCED = "rule to explicitly ACCEPT traffic that comply to network policies"


def args(binary: Path, *, kubeconfig: str, node_name: str, service_range: str) -> list[str]:
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--hostname-override={node_name}",
            "--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--run-loadbalancer=false",
            "--enable-cni=false", f"--service-cluster-ip-range={service_range}",
            "--health-port=0", "--metrics-port=0", "-v=1"]


def synced(in_ns) -> bool:
    """True once the controller's top-level chains are hooked into the filter table and its
    first full sync has run (``in_ns(*args)``: a command line inside the node's namespace)."""
    proc = subprocess.run(in_ns("iptables", "-t", "filter", "-S"), capture_output=True, text=True, timeout=30)
    lines = proc.stdout.splitlines()
    hooked = all(any(x.startswith(f"-A {chain} ") and x.endswith(f"-j KUBE-ROUTER-{chain}") for x in lines)
                 for chain in ("INPUT", "FORWARD", "OUTPUT"))
    return proc.returncode == 0 and hooked and SYNCED in proc.stdout
