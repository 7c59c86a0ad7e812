"""JSON: one record per object (and per file that could not be read), each
with the file and line, apiVersion, kind, namespace and name, its status, and
its violations with the line and column of their field."""
from __future__ import annotations

import json
from typing import TextIO

import orjson

from webhook.validate.output.model import SKIPPED, UNRELATED, Finding, Report, Result


def _finding(f: Finding) -> dict:
    out = {**f.error.as_dict(), "line": f.line, "column": f.column}
    if f.hint:                        # the detail stays the API server's; what turns the gate on is apart
        out["hint"] = f.hint
    return out


def _findings(r: Result, level: str) -> list[dict]:
    """The violations at `level`; the rules' warnings (a foreign PodGroup's BRG-1 too) are `warnings`."""
    return [_finding(f) for f in r.findings if f.level == level and f.error is not None]


def record(r: Result) -> dict:
    kind, _, ns, name = r.identity
    v = r.verdict
    return {"file": r.doc.file, "line": r.line, "apiVersion": r.api_version,
            "kind": None if kind == "<no kind>" else kind, "namespace": ns, "name": name,
            "status": r.state, "fails": r.fails, "allowed": v.allowed, "action": r.action,
            "skipped": r.reason if r.state == SKIPPED else None,
            "unrelated": r.reason if r.state == UNRELATED else None,
            "errors": _findings(r, "deny"), "warned": _findings(r, "warn"), "audited": _findings(r, "audit"),
            "warnings": list(v.warnings)}


def records(report: Report) -> list[dict]:
    out = [record(r) for r in report.results if report.shown(r)]
    for p in report.problems:
        out.append({"file": p.file, "line": p.line, "apiVersion": None, "kind": None, "namespace": None, "name": None,
                    "status": "error", "fails": True, "allowed": False, "action": "deny", "skipped": None,
                    "unrelated": None, "errors": [{"field": "", "type": "Invalid", "detail": p.message,
                                                   "line": p.line, "column": p.column}],
                    "warned": [], "audited": [], "warnings": []})
    return out


def render(report: Report, out: TextIO, err: TextIO) -> None:
    data = records(report)
    try:
        text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    except TypeError:                  # what orjson refuses (an integer beyond 64 bits in a name)
        text = json.dumps(data, indent=2, default=str)
    out.write(text + "\n")
