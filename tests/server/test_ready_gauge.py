"""workload_webhook_ready is what /readyz last answered, the signal of the
WorkloadWebhookNoReadyReplicas alert (a Running but unready replica still
answers scrapes, so `up` alone never says it): the real server, ready with no
cluster, and not ready while its API server refuses every connection."""
from __future__ import annotations

import json

from tests.server.harness import Server, free_port
from tests.unit.helpers import kubeconfig_to


def ready_gauge(server: Server) -> float | None:
    _, _, body = server.get("/metrics")
    values = [line.rsplit(" ", 1)[1] for line in body.decode().splitlines()
              if line.startswith("workload_webhook_ready ")]
    assert len(values) <= 1, values
    return float(values[0]) if values else None


def test_the_gauge_is_zero_from_start_up_and_follows_a_ready_answer(tmp_path):
    with Server(str(tmp_path), extra=["--cluster", "disabled"]) as server:
        assert ready_gauge(server) == 0.0               # nothing has asked /readyz yet
        status, _, _ = server.get("/readyz")
        assert status == 200
        assert ready_gauge(server) == 1.0


def test_the_gauge_is_zero_while_readyz_answers_503(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_to(f"https://127.0.0.1:{free_port()}"))     # nothing listens: refused
    with Server(str(tmp_path), extra=["--cluster", "kubeconfig", "--kubeconfig", str(kubeconfig)]) as server:
        for _ in range(4):                              # whichever worker answers
            status, _, body = server.get("/readyz")
            assert status == 503 and json.loads(body)["cluster"] == "syncing", body
        assert ready_gauge(server) == 0.0
