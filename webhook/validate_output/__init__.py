"""`validate`'s output formats, one module each: `text` (kubectl's lines), `jsonout`
(a record per object), `junit` (JUnit XML, a test case per object), `sarif`
(SARIF 2.1.0 for code scanning) and `github` (workflow commands that annotate
the file and line). `model` is what they all read: results, findings with their
positions, the summary that explains the exit code."""
from __future__ import annotations

import importlib
from typing import TextIO

from webhook.validate_output.model import Report

FORMATS = ("text", "json", "junit", "sarif", "github")
_MODULES = {"json": "jsonout"}


def render(fmt: str, report: Report, out: TextIO, err: TextIO) -> None:
    """Write `report` in format `fmt`: the format's document on `out`, and for
    text and github the summary on `err`."""
    module = importlib.import_module(f"webhook.validate_output.{_MODULES.get(fmt, fmt)}")
    module.render(report, out, err)
