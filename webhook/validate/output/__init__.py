"""`validate`'s output formats, one module each: `text` (kubectl's lines), `jsonout`
(a record per object), `junit` (JUnit XML, a test case per object), `sarif`
(SARIF 2.1.0 for code scanning) and `github` (workflow commands that annotate
the file and line). `model` is what they all read: results, findings with their
positions, the summary that explains the exit code."""
from __future__ import annotations

from typing import TextIO

from webhook.validate.output import github, jsonout, junit, sarif, text
from webhook.validate.output.model import Report

_FORMATS = {"text": text, "json": jsonout, "junit": junit, "sarif": sarif, "github": github}
FORMATS = tuple(_FORMATS)


def render(fmt: str, report: Report, out: TextIO, err: TextIO) -> None:
    """Write `report` in format `fmt`: the format's document on `out`, and for
    text and github the summary on `err`."""
    _FORMATS[fmt].render(report, out, err)
