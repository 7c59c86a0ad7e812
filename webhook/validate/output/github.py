"""GitHub Actions: a workflow command per violation (`::error file=F,line=L,
col=C,title=RULE::message`), which the runner turns into an annotation on
that line of the file. Escaped as the runner unescapes (actions/toolkit's
command.ts): `%`, CR and LF in the message, and also `:` and `,` in a
property. What fails the run is an error; the rest warnings and notices."""
from __future__ import annotations

from typing import TextIO

from webhook.validate.output.model import SKIPPED, Report, write_lines


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **props) -> str:
    fields = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items() if v is not None)
    return f"::{name}{' ' + fields if fields else ''}::{escape_data(message)}"


_QUIET = {"warn": "warning", "audit": "notice", "note": "notice"}


def lines(report: Report) -> list[str]:
    out = [command("error", p.message, file=p.file, line=p.line, col=p.column, title="file not read")
           for p in report.problems]
    for r in report.results:
        for f in r.findings:
            level = "error" if f.fails(report.fail_on) else _QUIET[f.level]
            out.append(command(level, f"{r.label}: {f.text}", file=r.doc.file, line=f.line, col=f.column,
                               title=f.rule))
        if r.state == SKIPPED and (r.fails or not report.quiet):
            out.append(command("error" if r.fails else "warning", f"{r.label}: skipped ({r.reason})",
                               file=r.doc.file, line=r.line, title="skipped"))
    return out


def render(report: Report, out: TextIO, err: TextIO) -> None:
    write_lines(lines(report), report, out, err)
