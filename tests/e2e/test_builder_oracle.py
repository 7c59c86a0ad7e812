"""webhook.builder against upstream's Go workloadbuilder, object by object: every
seeded tree (tests/e2e/builder_cases.py over oracle_cases.py's objects: leaf and
composite, every block, the controller's defaults and a callback, names at the
length limits) and the table entries of upstream's builder and podgroup tests
(builder_tables.yaml) is built by the oracle (hack/oracle's build mode,
workloadbuilder v0.37.2 and the Job controller's name generators, built by
hack/build-oracle.sh in the setup) and by the Python builder. The Workload, each
PodGroup and CompositePodGroup must be the same canonical JSON (keys sorted, no
spaces), byte for byte; a build error or a template not found must have Go's
message. Differences would be declared in docs/rules.md's YAML block under a
`builder:` id and honoured exactly; there are none.

Seeds: a fixed one and a rotating one (the day's date, or WW_ORACLE_SEED), as
test_upstream_oracle.py; WW_BUILDER_CASES sets the number of trees per seed."""
from __future__ import annotations

import datetime
import json
import os

import pytest
import yaml

from tests.e2e import oracle_differences as differences
from tests.e2e import oracle_run, summary
from tests.e2e.builder_cases import build_cases, python_build

TABLES = os.path.join(os.path.dirname(__file__), "builder_tables.yaml")
FIXED_SEED = 20371
ROTATING_SEED = int(os.environ.get("WW_ORACLE_SEED") or datetime.date.today().strftime("%Y%m%d"))
PER_SEED = int(os.environ.get("WW_BUILDER_CASES") or 2500)


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _tables() -> list[dict]:
    data = yaml.safe_load(open(TABLES, encoding="utf-8"))
    out = []
    for entry in data["entries"]:
        case = {"mode": "build", "embedding": entry["embedding"], "object": entry["object"],
                "rootName": entry.get("rootName", "root"), "defaults": entry.get("defaults"),
                "namespace": entry.get("namespace", "default"), "owner": entry.get("owner"),
                "podGroups": entry.get("podGroups", []), "composites": entry.get("composites", []),
                "source": entry["from"], "expect": entry.get("expect", {})}
        out.append(case)
    return out


def _comparable(answer: dict) -> dict:
    """An answer with its objects as canonical JSON (Go's encoder and Python's agree on values, not bytes)."""
    out = {"workloadName": answer.get("workloadName"), "buildError": answer.get("buildError") or None,
           "workload": canonical(answer["workload"]) if answer.get("workload") is not None else None}
    for key in ("podGroups", "composites"):
        out[key] = [(b.get("name"), canonical(b["object"]) if b.get("object") is not None else None,
                     b.get("error") or None) for b in answer.get(key) or []]
    return out


def _declared_builder_differences() -> list:
    return [d for d in differences.load() if d.id.startswith("builder")]


@pytest.fixture(scope="module")
def built():
    cases = _tables() + build_cases(FIXED_SEED, PER_SEED) + build_cases(ROTATING_SEED, PER_SEED)
    for i, c in enumerate(cases):
        c["id"] = i
    wire = [{k: v for k, v in c.items() if k not in ("source", "expect")} for c in cases]
    answers = oracle_run.ask(wire)
    out = [(c, answers[c["id"]], python_build(c)) for c in cases]
    same = sum(1 for _, go, py in out if not go.get("failure") and _comparable(go) == _comparable(py))
    objects = sum(1 + len(go.get("podGroups") or []) + len(go.get("composites") or []) for _, go, _ in out
                  if go.get("workload"))
    summary.add(f"builder oracle: {len(out)} trees (seeds {FIXED_SEED} and {ROTATING_SEED}, {PER_SEED} each, "
                f"+ {len(_tables())} from upstream's tables), {objects} objects built: {same} trees identical")
    return out


def test_the_oracle_builds_every_tree(built):
    failed = [(c["source"], go["failure"]) for c, go, _ in built if go.get("failure")]
    assert not failed, f"the oracle could not decode {len(failed)} trees, e.g. {failed[:3]}"


def test_the_cases_reach_every_outcome(built):
    """Leaf and composite Workloads, PodGroups and CompositePodGroups built, every build error
    and a template not found, names at the limit."""
    go = [a for _, a, _ in built]
    errors = {a["buildError"].split(" ")[0] for a in go if a.get("buildError")}
    assert {"a", "gang", "composite", "workload", "duplicate", "invalid"} <= errors, errors
    assert sum(1 for a in go if a.get("workload") and a["workload"]["spec"].get("compositePodGroupTemplates")) >= 200
    assert sum(1 for a in go if a.get("workload") and a["workload"]["spec"].get("podGroupTemplates")) >= 200
    assert sum(1 for a in go for b in a["podGroups"] if b.get("object")) >= 500
    assert sum(1 for a in go for b in a["composites"] if b.get("object")) >= 200
    assert sum(1 for a in go for b in a["podGroups"] + a["composites"] if b.get("error")) >= 200
    assert sum(1 for a in go if len(a.get("workloadName", "")) == 253) >= 20
    assert sum(1 for a in go for b in a["podGroups"] if len(b["name"]) == 253) >= 20


def test_every_tree_builds_the_same_objects_as_go(built):
    declared = _declared_builder_differences()
    assert not declared, "a builder difference is declared: this test must honour it (none is expected)"
    bad = []
    for c, go, py in built:
        g, p = _comparable(go), _comparable(py)
        if g != p:
            field = next(k for k in g if g[k] != p.get(k))
            bad.append(f"- {c['source']}: {field}\n    go     {g[field]}\n    python {p[field]}\n"
                       f"    case   {json.dumps({k: c[k] for k in ('embedding', 'object', 'rootName', 'defaults', 'owner')})}")
    assert not bad, (f"{len(bad)} of {len(built)} trees built differently from upstream's Go "
                     f"(replay: WW_ORACLE_SEED={ROTATING_SEED}):\n" + "\n".join(bad[:6]))


def test_the_tables_build_what_upstreams_tests_expect(built):
    """Each table entry's expectation, as upstream's test asserts it, holds for the Go answer (so the
    translation is faithful) and therefore for Python's."""
    checked = 0
    for c, go, py in built:
        for path, want in (c.get("expect") or {}).items():
            for side in (go, py):
                node = side
                for seg in path.split("."):
                    node = node[int(seg)] if isinstance(node, list) else (node or {}).get(seg)
                assert node == want, (c["source"], path, node, want)
                checked += 1
    assert checked >= 40
