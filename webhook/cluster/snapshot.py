"""One LIST per Pod, not one per worker: before gunicorn forks its workers, a
child of the master LISTs the PodGroups once (the watch cache's own paginated,
projected LIST) and hands the packed store back through a pipe; every worker
starts from it and watches from its resourceVersion (a 410 relists as usual).

At 100,000 groups a LIST costs kube-apiserver 1.5-2 s of CPU and each lister
about 2 s more, and two concurrent LISTs cost the API server more than twice
one; on two shared cores that made the difference between a 6 s and a 13 s
sync (bench/README.md). The LIST runs in a child so the master keeps none of
its garbage; the master holds the snapshot (marshal, ~250 B a group) only
until its first workers have forked. Each worker still keeps its own copy: a
shared one would be copied again page by page as lookups touch it (reference
counts), and it is ~0.5 KB a group (bench/README.md has the figures).

Anything that goes wrong (no cluster, a slow or failing LIST) leaves the
snapshot out, and each worker lists by itself as before."""
from __future__ import annotations

import logging
import marshal
import os
import select
import signal
import time

from webhook import kinds

log = logging.getLogger("workload_webhook.cluster")

FORMAT = "workload-webhook/snapshot/1"
DEADLINE = 15.0            # seconds the master waits for its LIST before the workers start without it


def listed_once(mode: str, kubeconfig: str | None, deadline: float = DEADLINE) -> bytearray | None:
    """The snapshot of one paginated LIST of PodGroups, made in a child process; None
    when there is no cluster configuration or the LIST did not complete in time."""
    started = time.monotonic()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                        # the child: list, write, exit
        code = 1
        try:
            os.close(read_end)
            data = _list(mode, kubeconfig)
            if data is not None:
                with os.fdopen(write_end, "wb") as out:
                    out.write(data)
                code = 0
        except BaseException as exc:                   # noqa: BLE001 - a child never returns into the master's code
            log.warning("LIST for the workers failed: %s", str(exc).splitlines()[0][:200] if str(exc) else
                        type(exc).__name__)
        finally:
            os._exit(code)
    os.close(write_end)
    data = bytearray()             # marshal reads it as it is: no joined copy
    complete = False
    try:
        while time.monotonic() - started < deadline:
            if select.select([read_end], [], [], 0.5)[0]:
                chunk = os.read(read_end, 1 << 20)
                if not chunk:
                    complete = True
                    break
                data += chunk
    finally:
        os.close(read_end)
        if not complete:
            _kill(pid)
        _reap(pid)
    if not complete or not restore(data):
        if not complete:
            log.warning("LIST for the workers took over %g s; each worker lists by itself", deadline)
        return None
    log.info("podgroups listed for the workers in %.2f s (%d bytes)", time.monotonic() - started, len(data))
    return data


def _list(mode: str, kubeconfig: str | None) -> bytes | None:
    from webhook.cluster.cache import Informer, api_client
    api = api_client(mode, kubeconfig)
    if api is None:
        return None
    inf = Informer(api, kinds.PODGROUP.plural, kinds.PODGROUP.versions)
    inf.list()
    return marshal.dumps((FORMAT, {inf.plural: (inf.version, inf.store.resource_version, inf.store.objects)}))


def restore(data: bytes | bytearray | None) -> dict[str, tuple[str, str, dict[str, bytes]]]:
    """plural -> (version, resourceVersion, packed objects) of a snapshot; {} if it is not one."""
    if not data:
        return {}
    try:
        fmt, listed = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return {}
    if fmt != FORMAT or not isinstance(listed, dict):
        return {}
    out = {}
    for plural, entry in listed.items():
        if isinstance(entry, tuple) and len(entry) == 3 and isinstance(entry[0], str) \
                and isinstance(entry[1], str) and isinstance(entry[2], dict):
            out[plural] = entry
    return out


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _reap(pid: int) -> None:
    """Wait for the child briefly; gunicorn's own SIGCHLD handler may have reaped it already."""
    for _ in range(50):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.1)
