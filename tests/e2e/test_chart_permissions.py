"""SECURITY.md's permission tables are what the chart grants (issue 37): the chart rendered by
the real helm with every option on (the bridge's two dialects, Events, namespace enforcement, the
audit, `self` certificates; Service mode with openreports, and `webhook.url` mode with wgpolicy
reports), every verb of every rendered Role and ClusterRole is a row of the table of the
ServiceAccount it is bound to, and every row's verb is rendered."""
from __future__ import annotations

import os
import re

from tests.e2e.test_chart_templates import EVERYTHING, FULLNAME, render, render_as
from tests.server.harness import REPO
from tests.unit.markdown import table_after

SECURITY = os.path.join(REPO, "SECURITY.md")
ON = {**EVERYTHING, "events": {"enabled": True},
      "config": {**EVERYTHING["config"], "bridge": {"coscheduling": True, "volcano": True}, "gangs": {"model": True},
                 "enforcement": {"namespaces": [{"selector": {"matchLabels": {"team": "research"}}, "action": "warn"}]}}}
RENDERS = [ON, {**ON, "webhook": {"url": "https://wh.example.com:9443"}, "audit": {"enabled": True,
                                                                                  "reportFormat": "wgpolicy"}}]
WHERE = {"every namespace": "ClusterRole", "the cluster": "ClusterRole", "the API server": "ClusterRole",
         "its namespace": "Role"}
TARGET_RESOURCE, TARGET_GROUP = "<each target's resource>", "<each target's group>"


def ticks(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def documented(account: str) -> set[tuple]:
    """(role kind, API group, resource, verb, name) of every row of SECURITY.md's `rbac: <account>` table;
    a non-resource URL has the group None."""
    with open(SECURITY, encoding="utf-8") as f:
        text = f.read()
    out = set()
    for cells in table_after(text, f"<!-- rbac: {account}"):
        kind = WHERE[cells["where"]]
        groups = [None] if cells["API group"] == "—" else [g.strip('"') for g in ticks(cells["API group"])]
        names = [None] if cells["only named"] == "—" else ticks(cells["only named"])
        assert ticks(cells["verbs"]) and ticks(cells["resources"]) and groups and names, cells
        out |= {(kind, g, r, v, n) for g in groups for r in ticks(cells["resources"]) for v in ticks(cells["verbs"])
                for n in names}
    assert out, account
    return out


def rendered(docs: list[dict], targets: set[tuple[str, str]]) -> dict[str, set[tuple]]:
    """The same tuples from the rendered Roles and ClusterRoles, by the ServiceAccount bound to them
    (serving, audit, test); a configured target's rule as the table's placeholder."""
    bound = {}
    for d in docs:
        if d["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            (subject,) = d["subjects"]
            bound[(d["roleRef"]["kind"], d["roleRef"]["name"])] = subject["name"]
    accounts = {FULLNAME: "serving", f"{FULLNAME}-audit": "audit", f"{FULLNAME}-test": "test"}
    out: dict[str, set[tuple]] = {a: set() for a in accounts.values()}
    for d in docs:
        if d["kind"] not in ("Role", "ClusterRole"):
            continue
        account = accounts[bound[(d["kind"], d["metadata"]["name"])]]
        for rule in d["rules"]:
            names = [n.replace(FULLNAME, "<fullname>") for n in rule.get("resourceNames") or []] or [None]
            for verb in rule["verbs"]:
                for url in rule.get("nonResourceURLs") or []:
                    out[account].add((d["kind"], None, url, verb, None))
                for group in rule.get("apiGroups") or []:
                    for resource in rule.get("resources") or []:
                        if (group, resource) in targets:
                            group, resource = TARGET_GROUP, TARGET_RESOURCE
                        out[account] |= {(d["kind"], group, resource, verb, n) for n in names}
    return out


def configured_targets(docs: list[dict]) -> set[tuple[str, str]]:
    """(group, resource) of each configured target: what the targets' validating webhook matches."""
    vwc = next(d for d in docs if d["kind"] == "ValidatingWebhookConfiguration")
    hook = next(h for h in vwc["webhooks"] if h["name"].startswith("targets.validate."))
    out = {(g, r) for rule in hook["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert ("training.example.com", "trainjobs") in out and ("jobset.x-k8s.io", "jobsets") in out, out
    return out


def test_every_rendered_permission_is_in_security_md_and_every_row_is_rendered(bin_dir, tmp_path):
    union: dict[str, set[tuple]] = {"serving": set(), "audit": set(), "test": set()}
    targets = configured_targets(render_as(bin_dir, tmp_path, "wwt", ON))
    for values in RENDERS:
        for account, granted in rendered(render(bin_dir, tmp_path, values), targets).items():
            union[account] |= granted
    for account, granted in union.items():
        docs = documented(account)
        assert granted - docs == set(), f"rendered, not in SECURITY.md ({account}): {sorted(granted - docs, key=str)}"
        assert docs - granted == set(), f"in SECURITY.md, never rendered ({account}): {sorted(docs - granted, key=str)}"


def test_the_table_reader_reads_the_tables():
    serving = documented("serving")
    assert ("ClusterRole", None, "/metrics", "get", None) in serving
    assert ("Role", "", "secrets", "update", "<fullname>-tls") in serving
    assert ("ClusterRole", "events.k8s.io", "events", "create", None) in serving
    assert ("ClusterRole", TARGET_GROUP, TARGET_RESOURCE, "watch", None) in documented("audit")
