"""A gang job's Pod burst through the real API server and the webhook: every
create succeeds and every stored Pod is joined to its group with the group's
claims. A count, not a time (speed is bench/burst_bench.py's job)."""
import json
import time

from tests.e2e import burst
from tests.unit.helpers import podgroup

GPU = {"name": "gpu", "resourceClaimTemplateName": "gpus"}


def test_burst_of_1000_pods_at_32_concurrent_creates_fails_none(webhook, kubectl, cluster, namespace):
    group = podgroup("burst", resourceClaims=[GPU], schedulingPolicy={"gang": {"minCount": 1000}})
    group["metadata"]["namespace"] = namespace
    kubectl.apply(group)
    # The first Pod through the webhook finds the group (watch cache or bounded GET).
    probe = burst.burst_pod("probe", "burst")
    probe["metadata"]["namespace"] = namespace
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        out = json.loads(kubectl("create", "-f", "-", "--dry-run=server", "-o", "json",
                                 stdin=json.dumps(probe)).stdout)
        if out["spec"].get("resourceClaims") == [GPU]:
            break
        time.sleep(0.2)

    result = burst.run(cluster, namespace, "burst", count=1000, concurrency=32)
    print(f"\nburst: {result.created} Pods in {result.seconds:.1f} s ({result.rate:.0f}/s), "
          f"p50 {result.quantile(0.5) * 1000:.0f} ms, p99 {result.quantile(0.99) * 1000:.0f} ms, "
          f"failed {len(result.failures)}")
    assert result.failures == [], result.failures[:5]
    assert result.created == 1000

    stored = json.loads(kubectl("get", "pods", "-n", namespace, "-l", "app=burst", "-o", "json", timeout=120).stdout)
    assert len(stored["items"]) == 1000
    unjoined = [p["metadata"]["name"] for p in stored["items"]
                if p["spec"].get("schedulingGroup") != {"podGroupName": "burst"}
                or p["spec"].get("resourceClaims") != [GPU]]
    assert unjoined == []
    burst.delete_pods(cluster, namespace)
