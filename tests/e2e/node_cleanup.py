"""What the real node (tests/e2e/node.py) may leave behind, cleaned from its files
alone: at start (a run killed earlier) and at the end of every stop. Processes are
ended by PID only: those of the harness's PID files, the containers in the kubelet's
kubepods cgroups, and the containerd shims of its own socket.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.e2e.node_files import BASE, CNI_NETWORK, NETNS

CGROUPS = Path("/sys/fs/cgroup")
CNI_RESULTS = Path("/var/lib/cni/results")        # go-cni's cache (not configurable in containerd 1.6)


def sh(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def _kill_if_ours(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal ``pid`` only if its command line names the harness directory (a PID file
    from a killed run may meanwhile belong to another process)."""
    try:
        if str(BASE).encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return
        os.kill(pid, sig)
    except (OSError, ValueError):
        pass


def _kubepods() -> list[Path]:
    return [d for d in (c / "kubepods" for c in CGROUPS.iterdir()) if d.is_dir()] if CGROUPS.is_dir() else []


def _kill_kubepods(timeout: float = 15) -> None:
    """SIGKILL every process in the kubelet's kubepods cgroup trees (the containers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = set()
        for tree in _kubepods():
            for procs in tree.rglob("cgroup.procs"):
                try:
                    pids.update(int(p) for p in procs.read_text().split())
                except OSError:
                    pass
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def _remove_kubepods() -> None:
    for tree in _kubepods():
        for d in sorted((p for p in tree.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True) + [tree]:
            for _ in range(20):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:        # still emptying (a process exiting)
                    time.sleep(0.1)


def _unmount_under(root: Path) -> None:
    """Lazy-unmount every mount point at or under ``root``, deepest first."""
    points = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].encode().decode("unicode_escape")
            if mp == str(root) or mp.startswith(f"{root}/"):
                points.add(mp)
    for mp in sorted(points, key=len, reverse=True):
        sh("umount", "-l", mp, check=False)


def _pidfiles() -> list[Path]:
    return sorted((BASE / "pids").glob("*.pid")) if (BASE / "pids").is_dir() else []


def kill_containers() -> None:
    """The kubelet first (it would restart them), then every container, then the shims."""
    for pidfile in _pidfiles():
        if pidfile.stem == "kubelet":
            _kill_if_ours(int(pidfile.read_text() or 0))
    _kill_kubepods()
    for pid in _shims():
        _kill_if_ours(pid)


def _shims() -> list[int]:
    """PIDs of the containerd shims serving our containerd: the only processes whose command
    line names its socket (``-address BASE/containerd/containerd.sock``; they write no PID
    file, and outlive containerd)."""
    address = f"-address\0{BASE}/containerd/containerd.sock\0".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if address in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def cleanup() -> None:
    """Everything the harness may have left, from its files alone: used at start (a killed
    earlier run) and at the end of stop(). Idempotent."""
    kill_containers()
    for pidfile in _pidfiles():
        _kill_if_ours(int(pidfile.read_text() or 0))
    time.sleep(0.2)
    sandboxes = {d.name for d in (BASE / "containerd").glob("*/io.containerd.grpc.v1.cri/sandboxes/*")}
    if BASE.is_dir():
        _unmount_under(BASE)
    if Path(f"/run/netns/{NETNS}").exists():
        sh("ip", "netns", "del", NETNS, check=False)
    _remove_kubepods()
    # go-cni's result cache: our network's entries and the loopback entries of our sandboxes.
    for cached in CNI_RESULTS.glob("*") if CNI_RESULTS.is_dir() else ():
        parts = cached.name.split("-")
        if cached.name.startswith(f"{CNI_NETWORK}-") or (len(parts) > 2 and parts[2] in sandboxes):
            cached.unlink(missing_ok=True)
    for d in (CNI_RESULTS, CNI_RESULTS.parent):
        try:
            d.rmdir()      # only when empty
        except OSError:
            pass
