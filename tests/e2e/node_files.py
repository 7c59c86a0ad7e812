"""The names and configuration files of the real node (tests/e2e/node.py): its
namespace and directory, containerd's, the kubelet's and the CNI network's
configuration (pure functions of paths and addresses)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

NETNS = "ww-e2e-node"                     # one fixed name and directory per machine
BASE = Path(os.environ.get("WW_NODE_DIR", "/tmp/ww-e2e-node"))
CNI_BIN = "/usr/lib/cni"          # Debian's containernetworking-plugins
RUNC = "/usr/sbin/runc"           # Debian's runc
CNI_NETWORK = "ww-e2e-pods"


def containerd_toml(base: Path, sandbox_image: str) -> str:
    """containerd 1.6 (config version 2): root, state, socket, runc state and CNI all
    under ``base``; cgroupfs; no registry configuration (every image is imported)."""
    c = base / "containerd"
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{c}/root"
state = "{c}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{c}/containerd.sock"
[ttrpc]
  address = "{c}/containerd.sock.ttrpc"
[debug]
  level = "info"
[plugins."io.containerd.internal.v1.opt"]
  path = "{c}/opt"
[{cri}]
  sandbox_image = "{sandbox_image}"
  # This VM lacks CAP_SYS_RESOURCE: runc may not lower oom_score_adj below containerd's.
  restrict_oom_score_adj = true
  # Pod network namespaces under the state dir, not /run/netns: teardown finds them there.
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        BinaryName = "{RUNC}"
        Root = "{c}/runc"
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{base}/cni/net.d"
    max_conf_num = 1
"""


def cni_conflist(base: Path, pod_cidr: str, bridge: str) -> str:
    """The Pods' network: a bridge (the gateway carries the first address) with host-local
    IPAM; no masquerade (nothing leaves the namespace)."""
    return json.dumps({
        "cniVersion": "1.0.0", "name": CNI_NETWORK,
        "plugins": [{"type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": False, "hairpinMode": True,
                     "ipam": {"type": "host-local", "ranges": [[{"subnet": pod_cidr}]],
                              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(base / "cni" / "ipam")}}],
    }, indent=2)


def kubelet_yaml(base: Path, *, node_ip: str, ca_path: Path, feature_gates: dict[str, bool]) -> str:
    """KubeletConfiguration for cgroup v1 with the cgroupfs driver, containerd under
    ``base``, webhook authn/authz (the API server's client certificate reaches logs)."""
    doc = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "failCgroupV1": False,            # this VM mounts cgroup v1; the default refuses it
        "failSwapOn": False,
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{base}/containerd/containerd.sock",
        "address": node_ip, "port": 10250, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(ca_path)}},
        "authorization": {"mode": "Webhook"},
        "clusterDomain": "cluster.local",
        "resolvConf": str(base / "resolv.conf"),   # empty: Pods get no name server to ask
        "podLogsDir": str(base / "pod-logs"),
        "featureGates": dict(feature_gates),
        "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "maxPods": 30,
        "rotateCertificates": False, "serverTLSBootstrap": False,
    }
    return yaml.safe_dump(doc, sort_keys=False)
