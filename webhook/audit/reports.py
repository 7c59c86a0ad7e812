"""Policy reports from an audit: one per namespace (Report / PolicyReport) and
one for cluster-scoped objects (ClusterReport / ClusterPolicyReport), in
openreports.io/v1alpha1 (default) or wgpolicyk8s.io/v1alpha2. A report holds
`summary` counts and the fail/warn results (pass results are only counted;
at most `--max-results` results per report). Re-running replaces every
report this tool wrote and deletes those of namespaces with nothing left."""
from __future__ import annotations

import time
from dataclasses import dataclass

from webhook.audit.runner import RESULT, AuditOutcome

NAME = "workload-webhook"
SOURCE = "workload-webhook"
MANAGED = {"app.kubernetes.io/managed-by": "workload-webhook"}


@dataclass(frozen=True)
class Format:
    group: str
    version: str
    kind: str
    plural: str
    cluster_kind: str
    cluster_plural: str
    result_key: str


FORMATS = {
    "openreports": Format("openreports.io", "v1alpha1", "Report", "reports", "ClusterReport", "clusterreports", "result"),
    "wgpolicy": Format("wgpolicyk8s.io", "v1alpha2", "PolicyReport", "policyreports", "ClusterPolicyReport",
                       "clusterpolicyreports", "result"),
}


def build(outcome: AuditOutcome, fmt: Format, namespace: str) -> dict:
    now = int(time.time())
    results = []
    for judged in outcome.found.get(namespace, []):
        resource = {"apiVersion": judged.api_version, "kind": judged.kind, "name": judged.name, "uid": judged.uid,
                    "resourceVersion": judged.resource_version, **({"namespace": namespace} if namespace else {})}
        for v in judged.violations:
            results.append({"source": SOURCE, "policy": v.rule or "kube-apiserver", "rule": v.rule or "mirror",
                            fmt.result_key: RESULT[v.action], "message": f"{v.field}: {v.message}"[:1024],
                            "properties": {"action": v.action, "field": v.field[:253]},
                            "timestamp": {"seconds": now, "nanos": 0}, "resources": [resource]})
    tally = outcome.tally.get(namespace, {})
    summary = {"pass": outcome.passed.get(namespace, 0), "fail": tally.get("fail", 0), "warn": tally.get("warn", 0),
               "error": 0, "skip": 0}
    meta = {"name": NAME, "labels": dict(MANAGED)}
    kind = fmt.kind
    if namespace:
        meta["namespace"] = namespace
    else:
        kind = fmt.cluster_kind
    report = {"apiVersion": f"{fmt.group}/{fmt.version}", "kind": kind, "metadata": meta, "summary": summary,
              "results": results}
    if fmt.group == "openreports.io":
        report["source"] = SOURCE
    return report


def write(api_client, outcome: AuditOutcome, fmt_name: str) -> list[str]:
    """Create or replace every report; delete this tool's reports where nothing was judged. Returns what it did."""
    from kubernetes.client.rest import ApiException

    from webhook.cluster.api import Api, path
    fmt = FORMATS[fmt_name]
    api = Api.of(api_client)
    done = []
    for ns in sorted(outcome.namespaces | {""}):
        body = build(outcome, fmt, ns)
        plural = fmt.plural if ns else fmt.cluster_plural
        try:
            current = api.expect("GET", path(fmt.group, fmt.version, plural, ns or None, NAME))
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            api.expect("PUT", path(fmt.group, fmt.version, plural, ns or None, NAME), body)
            done.append(f"replaced {body['kind']} {ns + '/' if ns else ''}{NAME}")
        except ApiException as exc:
            if exc.status != 404:
                raise
            api.expect("POST", path(fmt.group, fmt.version, plural, ns or None), body)
            done.append(f"created {body['kind']} {ns + '/' if ns else ''}{NAME}")
    selector = ",".join(f"{k}={v}" for k, v in MANAGED.items())
    stale = [item for page in api.pages(path(fmt.group, fmt.version, fmt.plural), {"labelSelector": selector})
             for item in page.get("items") or [] if isinstance(item, dict)]
    for item in stale:
        ns = item["metadata"].get("namespace") or ""
        if ns not in outcome.namespaces and item["metadata"]["name"] == NAME:
            api.expect("DELETE", path(fmt.group, fmt.version, fmt.plural, ns, NAME))
            done.append(f"deleted {fmt.kind} {ns}/{NAME} (nothing left to report there)")
    return done
