"""Every log query the docs give (`kubectl ... logs ... | grep '<pattern>'`, read from the docs
themselves) is grepped, with the real grep, against the lines of the real server (gunicorn over TLS,
logFormat json) after it was made to write what the queries look for: an engine error, a denial, a
warn and an audit violation, a warning. Each query must find a line, and find exactly the lines whose
field has that value, so it fails on the lines it must not match (issue 37: the docs' greps were
written for spaced JSON, which the compact lines never match)."""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from tests.server.harness import REPO, Server, admission_request
from tests.unit.helpers import podgroup, workload

QUERY = re.compile(r"\blogs\b[^\n|]*\|\s*grep '([^']+)'")
FIELD = re.compile(r'^"(\w+)":"([^"]*)"$')
# The engine fails on an object named "explode" (a sitecustomize module on PYTHONPATH: no test hook
# in the product), as tests/server/test_engine_failure.py does.
INJECT = '''
import webhook.engine as engine
_validate = engine.validate
def validate(req, cfg, view=None):
    if isinstance(req.object, dict) and (req.object.get("metadata") or {}).get("name") == "explode":
        raise RuntimeError("injected engine fault")
    return _validate(req, cfg, view)
engine.validate = validate
'''


def documented_queries() -> list[tuple[str, str]]:
    """(file, pattern) of every log grep in the docs."""
    files = sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))) + \
        [os.path.join(REPO, n) for n in ("README.md", "SECURITY.md")]
    out = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            out += [(os.path.relpath(path, REPO), m) for m in QUERY.findall(f.read())]
    return out


def test_the_docs_hold_the_queries_an_operator_needs():
    patterns = {p for _, p in documented_queries()}
    assert {'"level":"error"', '"verdict":"denied"'} <= patterns, patterns


@pytest.fixture(scope="module")
def log_lines(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("logq")
    site = tmp / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(INJECT)
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump({"events": {"enabled": True},      # no cluster: a warning at start
                                      "enforcement": {"targets": {"PodGroup": "warn", "Workload": "audit"}}}))
    env = {"PYTHONPATH": os.pathsep.join([str(site), REPO, os.environ.get("PYTHONPATH", "")])}
    with Server(str(tmp), config=str(config), extra=["--cluster", "disabled"], env=env) as server:
        basic_all = {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}      # DIS-2
        answers = {
            "denied": server.review("/validate", admission_request(podgroup("d", schedulingPolicy={"gang": {}})))[1],
            "warn": server.review("/validate", admission_request(podgroup("w", **basic_all)))[1],
            "audit": server.review("/validate", admission_request(workload([{"name": "t", **basic_all}])))[1],
            "error": server.review("/validate", admission_request(podgroup("explode")))[1],
        }
        r = {k: v["response"] for k, v in answers.items()}
        assert r["denied"]["allowed"] is False and r["denied"]["status"]["code"] == 422, r["denied"]
        assert r["warn"]["allowed"] is True and r["warn"]["warnings"], r["warn"]
        assert r["audit"]["allowed"] is True and "warnings" not in r["audit"], r["audit"]
        assert r["error"]["status"]["reason"] == "InternalError", r["error"]
    with open(server.log_path, encoding="utf-8") as f:
        return f.read()


def grep(pattern: str, path: str) -> list[str]:
    proc = subprocess.run([shutil.which("grep") or "grep", "--", pattern, path], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize("where,pattern", documented_queries())
def test_each_documented_log_query_finds_its_lines_and_only_those(where, pattern, log_lines, tmp_path):
    field = FIELD.match(pattern)
    assert field, f"{where}: grep '{pattern}' is not a \"field\":\"value\" query of the JSON lines"
    key, value = field.groups()
    path = tmp_path / "serve.log"
    path.write_text(log_lines)
    parsed = [(line, json.loads(line)) for line in log_lines.splitlines() if line.startswith("{")]
    assert parsed and all(isinstance(p, dict) for _, p in parsed)
    meant = [line for line, p in parsed if p.get(key) == value]
    others = [line for line, p in parsed if key in p and p[key] != value]
    found = grep(pattern, str(path))
    assert meant, f"{where}: the server wrote no line with {key} {value!r}"
    assert others, f"{where}: no line with another {key} to tell {pattern} from"
    assert found == meant, f"{where}: grep '{pattern}' found {len(found)} lines, {len(meant)} have {key} {value!r}"


def test_a_spaced_query_finds_nothing(log_lines, tmp_path):
    """What the docs had: the compact lines never match `"level": "error"`."""
    path = tmp_path / "serve.log"
    path.write_text(log_lines)
    assert grep('"level":"error"', str(path)) and not grep('"level": "error"', str(path))
