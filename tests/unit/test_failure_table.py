"""docs/operations.md's failure table ("The webhook is down") lists every webhook
webhook/registration.py registers, with the configuration it is in, its failure policy,
what it is sent and, with the bridge on, the Pods the foreign keys and scheduler names
bring to it; SECURITY.md's failure table names each of them (issue 37)."""
from __future__ import annotations

import os
import re

from tests.unit.helpers import TRAINJOB_TARGET
from tests.unit.markdown import table_after
from webhook import config as config_mod
from webhook.foreign.dialects import COSCHEDULING, VOLCANO
from webhook.registration import SUFFIX, Endpoint, configurations

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENDPOINT = Endpoint(b"ca", url="https://127.0.0.1:9443")
MARK = "<!-- failure table:"
BRIDGE_ON = {"coscheduling": True, "volcano": True, "schedulerNames": ["volcano"]}
IN = {"V": "ValidatingWebhookConfiguration", "M": "MutatingWebhookConfiguration"}


def _read(name: str) -> str:
    with open(os.path.join(REPO, name), encoding="utf-8") as f:
        return f.read()


def table_rows(text: str) -> dict[str, dict[str, str]]:
    """The rows of the table after MARK, by webhook name, each cell by its heading."""
    return {row["webhook"].strip("`"): row for row in table_after(text, MARK)}


def hooks(cfg, **kw) -> dict[str, tuple[str, dict]]:
    return {h["name"].removesuffix("." + SUFFIX): (d["kind"], h) for d in configurations(cfg, ENDPOINT, **kw)
            if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]}


# A target that defaults no minCount (DEF-1 off), so it reaches DEF-2 through targets.gang.mutate.
EVALJOB = {**TRAINJOB_TARGET, "kind": "EvalJob", "groups": [{**TRAINJOB_TARGET["groups"][0], "defaultMinCount": False}]}
GANG = {"enabled": True, "targets": [f"EvalJob.{TRAINJOB_TARGET['group']}"]}


def everything(bridge: dict | None = BRIDGE_ON):
    """Every webhook registration.py can write: the bridge on, Pods validated by the webhook, gangs by default."""
    return config_mod.from_dict({"targets": [TRAINJOB_TARGET, EVALJOB], "pods": {"validation": "webhook"},
                                 "gangByDefault": GANG, **({"bridge": bridge} if bridge else {})})


def test_the_table_has_a_row_for_every_webhook_registered_with_the_bridge_on_and_no_other():
    rows = table_rows(_read("docs/operations.md"))
    generated = hooks(everything())
    assert set(rows) == set(generated), (sorted(set(generated) - set(rows)), sorted(set(rows) - set(generated)))
    for name, (kind, _) in generated.items():
        assert IN[rows[name]["in"]] == kind, name


def test_each_rows_failure_policy_is_what_registration_writes():
    rows = table_rows(_read("docs/operations.md"))
    fail = hooks(everything())
    ignore = hooks(everything(), failure_policy="Ignore", pod_failure_policy="Ignore")
    objects_only = hooks(everything(), failure_policy="Ignore")
    for name, (_, hook) in fail.items():
        cell = rows[name]["`failurePolicy`"]
        if hook["failurePolicy"] == ignore[name][1]["failurePolicy"]:      # fixed whatever the values say
            assert cell == f"`{hook['failurePolicy']}`, always", (name, cell)
        elif objects_only[name][1]["failurePolicy"] == "Ignore":
            assert cell.startswith("`webhook.failurePolicy`"), (name, cell)
        else:
            assert cell.startswith("`webhook.podFailurePolicy`"), (name, cell)


def test_each_row_says_what_is_sent_the_operations_and_for_pods_every_match_condition():
    rows = table_rows(_read("docs/operations.md"))
    for name, (_, hook) in hooks(everything()).items():
        sent = rows[name]["what it is sent"]
        for op in {op for rule in hook["rules"] for op in rule["operations"]}:
            assert op in sent, (name, op)
        if "UPDATE" not in {op for rule in hook["rules"] for op in rule["operations"]}:
            assert "UPDATE" not in sent, name
        for group in {g for rule in hook["rules"] for g in rule["apiGroups"]} - {"", "scheduling.k8s.io", "batch",
                                                                              TRAINJOB_TARGET["group"]}:
            assert f"`{group}`" in sent, (name, group)
    pods = rows["pods.mutate"]["what it is sent"]
    condition = hooks(everything())["pods.mutate"][1]["matchConditions"][0]["expression"]
    for dialect in (COSCHEDULING, VOLCANO):
        assert f"'{dialect.pod_key}'" in condition and f"`{dialect.pod_key}`" in pods, dialect.name
    assert "object.spec.schedulerName" in condition and "`spec.schedulerName`" in pods
    assert "`spec.schedulingGroup`" in pods and "group label" in pods


def test_with_the_bridge_off_its_webhook_and_the_foreign_pod_conditions_are_gone():
    rows = table_rows(_read("docs/operations.md"))
    off = hooks(everything(bridge=None))
    assert set(off) == set(rows) - {"bridge.validate"}
    assert "with the bridge on" in rows["bridge.validate"]["registered"]
    condition = off["pods.mutate"][1]["matchConditions"][0]["expression"]
    assert "schedulerName" not in condition and COSCHEDULING.pod_key not in condition


def test_security_md_names_every_webhook_in_its_failure_table():
    text = _read("SECURITY.md")
    section = text[text.index("## What a down or compromised webhook means"):text.index("## Limits")]
    for name in hooks(everything()):
        assert f"`{name}`" in section, name
    assert re.search(r"bridge\.validate`, always `Ignore`", section)


def test_the_reader_reads_a_table():
    text = f"{MARK} -->\n| webhook | in |\n|---|---|\n| `a.b` | V |\n\nafter\n"
    assert table_rows(text) == {"a.b": {"webhook": "`a.b`", "in": "V"}}
