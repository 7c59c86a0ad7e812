"""SARIF 2.1.0 (OASIS), what code scanning reads (GitHub's upload-sarif,
GitLab, IDE viewers): one run, a result per violation at the file, line and
column of its field, the rules that were hit, and the invocation's exit code.
Levels: a violation that fails the run is an error, a warned one a warning,
an audited one or a rule's note a note. Objects no rule covers are results
of the rule `skipped`, files that could not be read of `file-not-read`."""
from __future__ import annotations

import json
import os
import urllib.parse
from typing import TextIO

from webhook.field import TYPES
from webhook.validate.output.model import SKIPPED, Report, summary_lines

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_REASONS = {reason: text for text, reason in TYPES.values()}
_LEVEL = {"deny": "error", "warn": "warning", "audit": "note", "note": "note"}
_OWN = {"skipped": "An object of a configured kind at a version no rule covers, or without apiVersion/kind",
        "file-not-read": "A file that could not be read or parsed",
        "warning": "A note of the rules (what they could not check)"}


def _uri(path: str) -> str:
    if path == "-":
        return "stdin"
    if os.path.isabs(path):
        return "file://" + urllib.parse.quote(path)
    return urllib.parse.quote(path.replace(os.sep, "/"))


def _rule(rule_id: str) -> dict:
    if rule_id in _OWN:
        text = _OWN[rule_id]
    elif rule_id in _REASONS:
        text = f"kube-apiserver's validation: {_REASONS[rule_id]} (a mirror rule, docs/rules.md)"
    else:
        text = f"workload-webhook policy rule {rule_id} (docs/rules.md)"
    return {"id": rule_id, "shortDescription": {"text": text}}


def _location(file: str, line: int | None, column: int | None, logical: str | None = None) -> dict:
    region = {"startLine": line or 1}
    if column:
        region["startColumn"] = column
    loc: dict = {"physicalLocation": {"artifactLocation": {"uri": _uri(file)}, "region": region}}
    if logical:
        loc["logicalLocations"] = [{"fullyQualifiedName": logical}]
    return loc


def log(report: Report, version: str) -> dict:
    results, rules = [], {}

    def add(rule_id: str, level: str, message: str, location: dict) -> None:
        rules.setdefault(rule_id, len(rules))
        results.append({"ruleId": rule_id, "ruleIndex": rules[rule_id], "level": level,
                        "message": {"text": message}, "locations": [location]})

    for p in report.problems:
        add("file-not-read", "error", p.message, _location(p.file, p.line, p.column))
    for r in report.results:
        for f in r.findings:
            level = "error" if f.fails(report.fail_on) else _LEVEL[f.level]
            field = str(f.error.field) if f.error is not None else ""
            add(f.rule, level, f"{r.label}: {f.text}",
                _location(r.doc.file, f.line, f.column, f"{r.api_version} {r.label}" + (f": {field}" if field else "")))
        if r.state == SKIPPED and (r.fails or not report.quiet):
            add("skipped", "error" if r.fails else "warning", f"{r.label}: skipped ({r.reason})",
                _location(r.doc.file, r.line, None, f"{r.api_version} {r.label}"))
    summary = report.summary
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "workload-webhook", "version": version,
                                "rules": [_rule(rule_id) for rule_id in rules]}},
            "columnKind": "unicodeCodePoints",
            "invocations": [{"executionSuccessful": True, "exitCode": summary.exit_code,
                             "exitCodeDescription": summary_lines(report)[1]}],
            "results": results,
        }],
    }


def render(report: Report, out: TextIO, err: TextIO) -> None:
    json.dump(log(report, report.tool_version), out, indent=2)
    out.write("\n")
