"""Text: a line per violation, as kubectl prints API errors, led by
`file:line:column:` as compilers do (editors and terminals jump to it); a line
per object saying what became of it; the summary and the exit code on stderr.
Under --quiet only the violations and what fails the run."""
from __future__ import annotations

from typing import TextIO

from webhook.validate.output.model import (AUDITED, SKIPPED, UNRELATED, VALID, WARNED, Report, Result,
                                           write_lines)

_TAG = {"deny": "", "warn": "Warning: ", "audit": "Audit: ", "note": "Warning: "}


def _state(r: Result) -> str | None:
    if r.state == VALID:
        return "valid"
    if r.state in (WARNED, AUDITED):
        if r.warns and not r.verdict.action:
            return f"admitted with warnings ({r.warns})"
        return f"admitted with {r.verdict.action}-level violations (enforcement)"
    if r.state == SKIPPED:
        return f"skipped ({r.reason})"
    if r.state == UNRELATED:
        return f"unrelated ({r.reason})"
    return None                       # invalid: its violations said it


def lines(report: Report) -> list[str]:
    out = [f"{p.where}: error: {p.message}" for p in report.problems]
    for r in report.results:
        if not report.shown(r):
            continue
        file, label = r.doc.file, r.label
        out += [f"{file}:{f.line}:{f.column}: {label}: {_TAG[f.level]}{f.text}" for f in r.findings]
        if not report.quiet or (r.fails and r.state == SKIPPED):
            state = _state(r)
            if state:
                out.append(f"{file}: {label}: {state}")
    return out


def render(report: Report, out: TextIO, err: TextIO) -> None:
    write_lines(lines(report), report, out, err)
