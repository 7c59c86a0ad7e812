"""The audit's pure parts: judging a stream of objects into counts and capped
results, and the policy reports built from them (both formats)."""
from __future__ import annotations

from tests.unit.helpers import config, trainjob
from webhook.audit import reports
from webhook.audit.runner import judge_all

BAD = {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}


def objects(n_bad: int, n_good: int, ns: str = "ml"):
    for i in range(n_bad + n_good):
        obj = trainjob(BAD if i < n_bad else {"schedulingPolicy": {"gang": {"minCount": 2}}})
        obj["metadata"] = {"name": f"t{i}", "namespace": ns, "uid": f"u{i}", "resourceVersion": "1"}
        yield obj


def test_counts_results_and_the_cap():
    out = judge_all(objects(5, 7), config(enforcement={"rules": {"DIS-2": "warn"}}), None, max_results=3)
    assert out.objects == 12 and out.passed["ml"] == 7
    assert out.by_rule[("DIS-2", "warn")] == 5 and out.objects_by_rule[("DIS-2", "warn")] == 5
    assert len(out.found["ml"]) == 3 and out.dropped["ml"] == 2 and out.tally["ml"]["warn"] == 5
    assert out.worst() == "warn"


def test_reports_in_both_formats():
    out = judge_all(objects(2, 3), config(), None, max_results=100)
    for fmt, api in (("openreports", "openreports.io/v1alpha1"), ("wgpolicy", "wgpolicyk8s.io/v1alpha2")):
        r = reports.build(out, reports.FORMATS[fmt], "ml")
        assert r["apiVersion"] == api and r["metadata"]["namespace"] == "ml"
        assert r["summary"] == {"pass": 3, "fail": 2, "warn": 0, "error": 0, "skip": 0}
        assert [x["result"] for x in r["results"]] == ["fail", "fail"]
        assert r["results"][0]["policy"] == "DIS-2" and r["results"][0]["resources"][0]["uid"] == "u0"
    cluster = reports.build(out, reports.FORMATS["openreports"], "")
    assert cluster["kind"] == "ClusterReport" and "namespace" not in cluster["metadata"] and cluster["results"] == []


def test_the_worst_action_counts_objects_over_the_cap():
    out = judge_all(objects(3, 0), config(), None, max_results=0)
    assert out.worst() == "deny" and not any(out.found.values()) and out.violating == 3 and out.dropped["ml"] == 3
