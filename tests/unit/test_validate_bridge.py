"""`validate` judges Coscheduling and Volcano PodGroups as the server does once the
config's `bridge` switches their dialect on: the same objects go through the CLI
offline and through the engine as the server calls it (an AdmissionReview parsed by
webhook.admission.review, engine.validate at scope admission, the response's
warnings), and both say the same BRG-1 warnings, word for word. The objects are
written to the projects' published CRDs (../shared/crds, beside the repository),
which the CLI is given with --crd too."""
from __future__ import annotations

import json
import os

import jsonschema
import pytest
import yaml

from tests.server.harness import REPO, admission_request
from webhook import config as config_mod, engine
from webhook.admission import review
from webhook.cli import main

CRD_FILES = {"scheduling.x-k8s.io": "coscheduling-v0.34.7.yaml",
             "scheduling.volcano.sh": "volcano-podgroups-v1.15.1.yaml"}
BRIDGE = {"bridge": {"coscheduling": True, "volcano": True}}


def shared_crd(name: str) -> str:
    """A published CRD of ../shared/crds: beside the repository's checkout (a worktree's too)."""
    here = os.path.abspath(REPO)
    while True:
        path = os.path.join(os.path.dirname(here), "shared", "crds", name)
        if os.path.exists(path):
            return path
        if os.path.dirname(here) == here:
            raise AssertionError(f"the published CRD {name} is missing: the tests read ../shared/crds (CI has it)")
        here = os.path.dirname(here)


def volcano(name: str, **spec) -> dict:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def coscheduling(name: str, **spec) -> dict:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


FOREIGN = [
    volcano("queued", minMember=4, queue="gpu", minResources={"cpu": "4", "nvidia.com/gpu": 8}),
    volcano("tasks", minMember=3, minTaskMember={"worker": 2}, networkTopology={"mode": "hard",
                                                                               "highestTierAllowed": 1}),
    volcano("plain", minMember=2, queue="default", priorityClassName="high"),
    volcano("empty", minMember=0, subGroupPolicy=[{"name": "g", "minSubGroups": 1}]),
    coscheduling("timed", minMember=2, scheduleTimeoutSeconds=30, minResources={"memory": "1Gi"}),
    coscheduling("fine", minMember=2),
]


def crd_version_schema(obj: dict) -> dict:
    group, _, version = obj["apiVersion"].rpartition("/")
    with open(shared_crd(CRD_FILES[group]), encoding="utf-8") as f:
        crd = next(d for d in yaml.safe_load_all(f) if d)
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("obj", FOREIGN, ids=[o["metadata"]["name"] for o in FOREIGN])
def test_the_objects_are_what_the_published_crds_accept(obj):
    jsonschema.Draft4Validator(crd_version_schema(obj)).validate(obj)


def server_warnings(obj: dict, cfg: config_mod.Config) -> list[str]:
    """What the server answers a foreign PodGroup's create: the review it is sent, parsed as
    server/admit.py parses it, judged by engine.validate as it judges, answered by review.respond."""
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": admission_request(obj)}).encode()
    parsed = review.parse(body, "application/json")
    answer = review.respond(parsed.uid, engine.validate(parsed.request, cfg), parsed)["response"]
    assert answer["allowed"] is True                      # BRG-1 never denies
    return answer.get("warnings", [])


@pytest.fixture
def files(tmp_path):
    manifests = tmp_path / "foreign.yaml"
    manifests.write_text(yaml.safe_dump_all(FOREIGN, sort_keys=False))
    cfg = tmp_path / "bridge.yaml"
    cfg.write_text(yaml.safe_dump(BRIDGE))
    return manifests, cfg


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(["validate", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_cli_offline_says_what_the_server_says(capsys, files):
    manifests, cfg_file = files
    cfg = config_mod.load(str(cfg_file))
    code, out, err = cli(capsys, "-f", str(manifests), "--config", str(cfg_file), "-o", "json",
                         "--crd", shared_crd(CRD_FILES["scheduling.x-k8s.io"]),
                         "--crd", shared_crd(CRD_FILES["scheduling.volcano.sh"]))
    assert code == 0, err
    records = {r["name"]: r for r in json.loads(out)}
    said = {o["metadata"]["name"]: server_warnings(o, cfg) for o in FOREIGN}
    assert sum(map(len, said.values())) >= 7 and said["fine"] == [] and said["plain"] == []
    for name, warnings in said.items():
        record = records[name]
        assert record["warnings"] == warnings, name
        assert record["errors"] == [], name                       # the CRDs declare every field given
        assert (record["status"], record["action"]) == (("warned", "warn") if warnings else ("valid", None)), name
    assert any("spec.queue: not mirrored" in w and w.endswith("(BRG-1)") for w in said["queued"])
    assert any(w.startswith("spec.minMember: 0:") for w in said["empty"])


def test_the_text_lines_are_the_servers_warnings_at_their_fields(capsys, files):
    manifests, cfg_file = files
    cfg = config_mod.load(str(cfg_file))
    code, out, err = cli(capsys, "-f", str(manifests), "--config", str(cfg_file))
    assert code == 0, err
    queue = server_warnings(FOREIGN[0], cfg)[0]
    # `queue` is the 8th line of the stream (yaml.safe_dump keeps the keys' order), at column 3.
    assert f"{manifests}:8:3: PodGroup ml/queued: Warning: {queue}" in out.splitlines()
    assert f"{manifests}: PodGroup ml/queued: admitted with warnings (BRG-1)" in out
    assert f"{manifests}: PodGroup ml/fine: valid" in out
    assert err.splitlines()[:2] == ["6 object(s) checked, 0 invalid, 0 skipped (suspicious), 0 unrelated, "
                                    "4 warned, 0 audited", "exit 0: nothing fails at --fail-on deny"]


def test_fail_on_warn_fails_the_run_on_them_in_every_format(capsys, files):
    manifests, cfg_file = files
    for fmt in ("text", "github"):
        code, out, err = cli(capsys, "-f", str(manifests), "--config", str(cfg_file), "--fail-on", "warn", "-o", fmt)
        assert code == 1 and "exit 1 because of 4 warned (--fail-on warn)" in err, (fmt, err)
    code, out, _ = cli(capsys, "-f", str(manifests), "--config", str(cfg_file), "-o", "github")
    assert code == 0 and "::warning file=" in out and "title=BRG-1::PodGroup ml/queued: spec.queue" in out
    code, out, _ = cli(capsys, "-f", str(manifests), "--config", str(cfg_file), "--fail-on", "warn", "-o", "sarif")
    [run] = json.loads(out)["runs"]
    assert run["invocations"][0]["exitCode"] == code == 1
    assert {r["ruleId"] for r in run["results"]} == {"BRG-1"} and {r["level"] for r in run["results"]} == {"error"}
    code, out, _ = cli(capsys, "-f", str(manifests), "--config", str(cfg_file), "--fail-on", "warn", "-o", "junit")
    assert code == 1 and out.count('<failure message="spec.') == 4 and 'type="BRG-1"' in out


def test_a_typo_the_crd_does_not_declare_is_an_error_beside_the_warnings(capsys, tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(volcano("typo", minMember=2, queue="gpu", minMembr=3)))
    cfg = tmp_path / "bridge.yaml"
    cfg.write_text(yaml.safe_dump(BRIDGE))
    code, out, _ = cli(capsys, "-f", str(path), "--config", str(cfg),
                       "--crd", shared_crd(CRD_FILES["scheduling.volcano.sh"]))
    assert code == 1 and 'unknown field "spec.minMembr"' in out and "Warning: spec.queue: not mirrored" in out


def test_with_the_bridge_off_they_are_unrelated_with_the_key_that_judges_them(capsys, files):
    manifests, _ = files
    code, out, err = cli(capsys, "-f", str(manifests))
    assert code == 0 and "Warning" not in out
    assert "PodGroup ml/queued: unrelated (no rules for PodGroup.scheduling.volcano.sh: the bridge is off" in out
    assert "hint: PodGroup objects were not judged: bridge.volcano: true in --config judges them" in err
    assert "hint: PodGroup objects were not judged: bridge.coscheduling: true in --config judges them" in err
    # Nor does the server judge them then: the engine has no rule for the kind.
    assert engine.validate(engine.Request.for_object(FOREIGN[0]), config_mod.load(None)).checked is False


def test_one_dialect_on_judges_only_its_own(capsys, files, tmp_path):
    manifests, _ = files
    cfg = tmp_path / "volcano.yaml"
    cfg.write_text(yaml.safe_dump({"bridge": {"volcano": True}}))
    code, out, err = cli(capsys, "-f", str(manifests), "--config", str(cfg), "-o", "json")
    status = {r["name"]: r["status"] for r in json.loads(out)}
    assert status == {"queued": "warned", "tasks": "warned", "plain": "valid", "empty": "warned",
                      "timed": "unrelated", "fine": "unrelated"}


def test_an_update_is_not_judged_as_the_server_is_not_asked(capsys, files):
    manifests, cfg_file = files
    code, out, _ = cli(capsys, "-f", str(manifests), "--old", str(manifests), "--config", str(cfg_file))
    assert code == 0 and "Warning" not in out and "PodGroup ml/queued: unrelated (PodGroup is judged on create only)" in out
    for obj in FOREIGN:
        assert engine.validate(engine.Request.for_object(obj, obj), config_mod.from_dict(BRIDGE)).checked is False
