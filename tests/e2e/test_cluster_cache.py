"""The watch cache against a real API server: after etcd compacts past the
version an informer watches from, kube-apiserver answers 410 Gone (kubernetes
37's Watch.stream raises it as ApiException(410); it yields no ERROR event),
and the informer relists and keeps serving, objects created afterwards
included. Its own control plane: kube-apiserver's watch cache would replay
old versions from memory, so this one runs with `--watch-cache=false`, where
watches read etcd and a compaction really expires them."""
import base64
import json
import subprocess
import time
import urllib.request

import pytest

from tests.e2e.controlplane import ControlPlane
from tests.unit.helpers import podgroup
from webhook.cluster.cache import Informer, api_client


@pytest.fixture(scope="module")
def etcd_backed(bin_dir, tmp_path_factory):
    cp = ControlPlane(bin_dir, tmp_path_factory.mktemp("etcd-backed"), extra_args=["--watch-cache=false"])
    cp.start()
    yield cp
    cp.stop()


def _etcd(cp, path: str, body: dict) -> dict:
    req = urllib.request.Request(cp.etcd_url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _kubectl(cp, *args, stdin=None):
    return subprocess.run([cp.kubectl, "--kubeconfig", cp.kubeconfig("admin"), *args], input=stdin, text=True,
                          capture_output=True, check=True, timeout=60)


def _pg(name):
    obj = podgroup(name)
    obj["metadata"]["namespace"] = "default"
    return json.dumps(obj)


def test_410_gone_from_a_real_watch_relists_and_keeps_serving(etcd_backed):
    cp = etcd_backed
    _kubectl(cp, "create", "-f", "-", stdin=_pg("before"))
    relists = _sample("workload_webhook_cluster_cache_relists_total")
    informer = Informer(api_client("kubeconfig", cp.kubeconfig("admin")), "podgroups",
                        ("v1beta1", "v1alpha3"), watch_seconds=2)
    informer.start()
    try:
        deadline = time.monotonic() + 30
        while not informer.store.synced and time.monotonic() < deadline:
            time.sleep(0.1)
        assert informer.store.get("default", "before") is not None and informer.relists == 1
        assert _sample("workload_webhook_cluster_cache_relists_total") == relists     # the first LIST is no relist
        assert _sample("workload_webhook_cluster_cache_synced") == 1
        assert _sample("workload_webhook_cluster_cache_objects") == 1
        listed_at = _sample("workload_webhook_cluster_cache_last_event_timestamp_seconds")
        assert listed_at == pytest.approx(time.time(), abs=30)
        watched_from = informer.store.resource_version
        # Other writes move etcd's revision on; compacting there expires the informer's version.
        for i in range(3):
            _kubectl(cp, "create", "configmap", f"filler-{i}", "-n", "default")
        revision = _etcd(cp, "/v3/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"]
        _etcd(cp, "/v3/kv/compaction", {"revision": revision, "physical": True})
        deadline = time.monotonic() + 30
        while informer.relists < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert informer.relists >= 2, "no relist after 410 Gone"
        assert _sample("workload_webhook_cluster_cache_relists_total") >= relists + 1
        assert _sample("workload_webhook_cluster_cache_last_event_timestamp_seconds") > listed_at
        assert int(informer.store.resource_version) >= int(revision) > int(watched_from)
        _kubectl(cp, "create", "-f", "-", stdin=_pg("after"))
        deadline = time.monotonic() + 30
        while informer.store.get("default", "after") is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert informer.store.get("default", "after") is not None, "the watch did not resume after the relist"
        assert _sample("workload_webhook_cluster_cache_objects") == 2
        assert informer.store.get("default", "before") is not None
    finally:
        informer.stop()


def _sample(name: str) -> float:
    from prometheus_client import REGISTRY
    return REGISTRY.get_sample_value(name, {"resource": "podgroups"}) or 0.0


def test_bookmarks_and_the_watchs_own_end_keep_a_quiet_cache_fresh(cluster):
    """No PodGroup is written, yet the last-event time moves on: the end of each healthy watch
    (watch_seconds) counts, and so does a bookmark, which kube-apiserver's watch cache sends 2 s
    before a watch's deadline (and about every minute) once its view of etcd has moved on: here
    another object written, then a consistent LIST of PodGroups."""
    informer = Informer(api_client("kubeconfig", cluster.kubeconfig("admin")), "podgroups",
                        ("v1beta1", "v1alpha3"), watch_seconds=5)
    informer.start()
    name = f"bookmark-{int(time.time())}"
    try:
        deadline = time.monotonic() + 30
        while not informer.store.synced and time.monotonic() < deadline:
            time.sleep(0.1)
        assert informer.store.synced
        synced_at, version = _sample("workload_webhook_cluster_cache_last_event_timestamp_seconds"), \
            informer.store.resource_version
        objects = len(informer.store.objects)
        deadline = time.monotonic() + 30
        while _sample("workload_webhook_cluster_cache_last_event_timestamp_seconds") <= synced_at + 1:
            assert time.monotonic() < deadline, "the end of a quiet watch did not count"
            time.sleep(0.2)
        _kubectl(cluster, "create", "configmap", name, "-n", "default")
        _kubectl(cluster, "get", "podgroups", "-A")
        deadline = time.monotonic() + 30
        while informer.bookmarks == 0:
            assert time.monotonic() < deadline, "no bookmark within 30 s"
            time.sleep(0.2)
        assert informer.relists == 1 and len(informer.store.objects) == objects     # no LIST, no PodGroup
        assert int(informer.store.resource_version) > int(version)
    finally:
        informer.stop()
        _kubectl(cluster, "delete", "configmap", name, "-n", "default", "--ignore-not-found", "--wait=false")


def test_a_cluster_serving_only_v1alpha3_is_watched_in_v1alpha3(bin_dir, tmp_path_factory):
    """Discovery falls back to v1alpha3 when v1beta1 is not served, and lookups use it."""
    cp = ControlPlane(bin_dir, tmp_path_factory.mktemp("alpha-only"),
                      runtime_config=("scheduling.k8s.io/v1alpha3=true",))
    cp.start()
    try:
        obj = json.loads(_pg("alpha"))
        obj["apiVersion"] = "scheduling.k8s.io/v1alpha3"
        _kubectl(cp, "create", "-f", "-", stdin=json.dumps(obj))
        from webhook.cluster.cache import ClusterCache
        cache = ClusterCache(api_client("kubeconfig", cp.kubeconfig("admin")), timeout=2.0).start()
        try:
            deadline = time.monotonic() + 30
            while not cache.synced["podgroups"] and time.monotonic() < deadline:
                time.sleep(0.1)
            assert cache.informers["podgroups"].version == "v1alpha3"
            assert cache.podgroup("default", "alpha")["metadata"]["name"] == "alpha"
            assert cache.podgroup("default", "missing") is None       # a real 404 in v1alpha3: not found
        finally:
            cache.stop()
    finally:
        cp.stop()


def test_the_served_caches_freshness_adds_up_over_the_workers(webhook):
    """`serve` with two workers and the master's one LIST: every worker's cache synced (the
    lowest), its objects, a recent last event. (The LIST's child process once wrote a zero that
    held the synced gauge at 0 for ever.)"""
    _, _, body = webhook.server.get("/metrics")
    values = {line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
              for line in body.decode().splitlines() if line and not line.startswith("#")}
    assert values['workload_webhook_cluster_cache_synced{resource="podgroups"}'] == 1
    assert values['workload_webhook_cluster_cache_objects{resource="podgroups"}'] >= 0
    assert time.time() - values['workload_webhook_cluster_cache_last_event_timestamp_seconds{resource="podgroups"}'] \
        < 600
    assert values['workload_webhook_cluster_cache_relists_total{resource="podgroups"}'] == 0
