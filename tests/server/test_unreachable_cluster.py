"""The real server with a cluster that never answers (a loopback listener that
accepts and stays silent): readiness says "syncing" (503) instead of lying,
and a Pod lookup gives up within the lookup timeout with a warning, counted
as unavailable, instead of holding the admission call."""
import json
import socket
import threading
import time

import pytest

from tests.server.harness import Server, admission_request
from tests.unit.helpers import kubeconfig_to, pod


@pytest.fixture(scope="module")
def silent_apiserver():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                pass
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    listener.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory, silent_apiserver):
    """One server for the module: starting against a silent API server waits out the
    gates' read and the master's LIST (their connect bounds, ~10 s). One worker, so that the second test's
    requests share the worker whose lookup waits; the first test runs first and sees
    the only lookup in the metrics."""
    tmp_path = tmp_path_factory.mktemp("silent")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_to(f"https://127.0.0.1:{silent_apiserver}"))
    with Server(str(tmp_path), workers=1, extra=["--cluster", "kubeconfig", "--kubeconfig", str(kubeconfig),
                                                 "--lookup-timeout", str(LOOKUP_TIMEOUT)]) as s:
        yield s


LOOKUP_TIMEOUT = 3


def test_ADM_7_POD_5_readiness_and_lookups_with_a_silent_api_server(server):
    status, _, body = server.get("/readyz")
    assert status == 503 and json.loads(body)["cluster"] == "syncing"
    started = time.monotonic()
    status, review = server.review("/mutate", admission_request(pod({"scheduling.k8s.io/pod-group": "pg"})))
    elapsed = time.monotonic() - started
    r = review["response"]
    assert status == 200 and r["allowed"] is True and "patch" in r       # joined, claims not injected
    assert any("not looked up" in w for w in r["warnings"]), r["warnings"]
    assert elapsed < 10, f"the lookup held the call {elapsed:.1f} s"    # bounded by the 3 s timeout
    _, _, metrics = server.get("/metrics")
    assert 'workload_webhook_cluster_lookups_total{resource="podgroups",source="unavailable"} 1.0' in \
        metrics.decode()


def _in_flight(server) -> float:
    _, _, body = server.get("/metrics")
    gauge = 'workload_webhook_requests_in_flight{endpoint="mutate"}'
    line = next(x for x in body.decode().splitlines() if x.startswith(gauge))
    return float(line.rsplit(" ", 1)[1])


def test_a_lookup_waiting_for_the_api_server_holds_no_other_request(server):
    """One worker: while a Pod's PodGroup lookup waits out its timeout (in the
    worker's lookup pool), the event loop keeps answering other requests."""
    waited = {}

    def slow() -> None:
        started = time.monotonic()
        status, review = server.review("/mutate", admission_request(pod({"scheduling.k8s.io/pod-group": "pg"})))
        waited["seconds"], waited["review"], waited["done"] = time.monotonic() - started, review, time.monotonic()

    thread = threading.Thread(target=slow)
    thread.start()
    deadline = time.monotonic() + 10
    while _in_flight(server) < 1:     # the slow one is read and waits in the lookup pool
        assert time.monotonic() < deadline and thread.is_alive(), "the slow request never got in flight"
        time.sleep(0.02)
    answered = []
    for i in range(20):
        started = time.monotonic()
        status, review = server.review("/mutate", admission_request(pod({}), uid=f"plain-{i}"))
        assert status == 200 and review["response"]["allowed"] is True
        answered.append(time.monotonic() - started)
        status, _, _ = server.get("/healthz")
        assert status == 200
    last_plain = time.monotonic()
    thread.join(30)
    assert waited["seconds"] >= LOOKUP_TIMEOUT - 0.5, waited      # the slow one really waited for its lookup
    assert any("not looked up" in w for w in waited["review"]["response"]["warnings"])
    assert max(answered) < 2.0, answered                            # and nobody waited behind it
    assert last_plain < waited["done"], "the other requests were answered while the lookup waited"
