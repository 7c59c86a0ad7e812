"""One implementation: Builder.validate reports exactly the engine's errors for the same
blocks, on the differential test's seeded creates (tests/e2e/oracle_cases.py, leaf and
composite embeddings, every block form), except what the builder cannot know: a group's
size (POL-3) and a composite's child count (CMP-1's "at least one child"; with none, the
tree is a leaf carrying composite blocks, which is the caller's bug: InvocationError)."""
from __future__ import annotations

from tests.e2e.builder_cases import tree
from tests.e2e.oracle_cases import generate
from tests.e2e.test_upstream_oracle import CONFIG, _request
from webhook import engine
from webhook.builder import ALL_MODES, ALL_POLICIES, Builder, BuildOptions, InvocationError

OPTIONS = BuildOptions(allowed_policies=ALL_POLICIES, allowed_disruption_modes=ALL_MODES)


def _engine(c: dict) -> set:
    verdict = engine.validate(_request(c["embedding"], c["object"], None), CONFIG)
    return {e.identity for e in verdict.errors
            if e.rule != "POL-3" and not (e.rule == "CMP-1" and "at least one child" in e.detail)}


def test_the_builder_reports_the_engines_errors():
    compared, refused, differ = 0, 0, []
    for c in generate(20370, 2000):
        if c["oldObject"] is not None or c["embedding"] == "job":
            continue
        b = Builder(tree({**c, "rootName": "root", "defaults": None}), OPTIONS)
        try:
            mine = {e.identity for e in b.validate()}
        except InvocationError:
            assert c["embedding"] == "composite" and not c["object"]["spec"].get("replicatedJobs"), c["source"]
            refused += 1
            continue
        compared += 1
        if mine != _engine(c):
            differ.append((c["source"], sorted(map(str, mine ^ _engine(c)))[:3]))
    assert compared >= 400 and refused >= 10 and not differ, (compared, refused, differ[:5])
