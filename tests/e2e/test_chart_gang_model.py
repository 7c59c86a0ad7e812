"""The chart with the live gang model (config.gangs.model), rendered by the real helm: the RBAC
it needs (list and watch Pods, create Events, the bridge's Lease) only when it is on, none of the
bridge's writes, and the Lease named in the config the serving Pods read."""
from __future__ import annotations

import yaml

from tests.e2e.test_chart_templates import FULLNAME, NS, one, render


def rules(docs, kind):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == FULLNAME]
    return {(g, r, v) for d in found for rule in d.get("rules") or [] for g in rule.get("apiGroups", [])
            for r in rule.get("resources", []) for v in rule["verbs"]}


def config(docs) -> dict:
    return yaml.safe_load(one(docs, "ConfigMap", FULLNAME)["data"]["config.yaml"])


def test_on_it_grants_the_pod_watch_events_and_the_lease_and_names_the_lease(bin_dir, tmp_path):
    docs = render(bin_dir, tmp_path, {"config": {"gangs": {"model": True}}})
    cluster, ns = rules(docs, "ClusterRole"), rules(docs, "Role")
    assert {("", "pods", "list"), ("", "pods", "watch"), ("events.k8s.io", "events", "create")} <= cluster
    assert ("scheduling.k8s.io", "podgroups", "create") not in cluster       # the bridge's writes stay off
    assert {("coordination.k8s.io", "leases", "create"), ("coordination.k8s.io", "leases", "update")} <= ns
    c = config(docs)
    assert c["gangs"] == {"model": True}
    assert c["bridge"]["lease"] == {"name": f"{FULLNAME}-bridge", "namespace": NS}


def test_off_by_default_no_pod_watch_no_lease(bin_dir, tmp_path):
    docs = render(bin_dir, tmp_path, {})
    cluster, ns = rules(docs, "ClusterRole"), rules(docs, "Role")
    assert ("", "pods", "watch") not in cluster and ("events.k8s.io", "events", "create") not in cluster
    assert not {r for r in ns if r[0] == "coordination.k8s.io"}
    assert "gangs" not in config(docs)


def test_a_typo_under_gangs_is_refused_by_the_values_schema(bin_dir, tmp_path):
    proc = render(bin_dir, tmp_path, {"config": {"gangs": {"modle": True}}}, check=False)
    assert proc.returncode != 0 and "modle" in proc.stderr, proc.stderr
