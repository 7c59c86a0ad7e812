"""JUnit XML, as Jenkins, GitLab and most CI servers read test reports: a test
suite per file, a test case per judged or skipped object (`TrainJob ml/llama
(training.example.com/v1alpha1)`), a <failure> when the object fails the run
with each violation as `file:line:column: field: ...`, <skipped> for an object
no rule covers, <error> for a file that could not be read. Violations that do
not fail the run (warned under --fail-on deny) are the case's <system-out>.
Unrelated objects are not tests. The shape is the common JUnit report format
those servers read (tests/unit/data/junit-report.xsd checks it)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TextIO

from webhook.validate.output.model import SKIPPED, UNRELATED, Report, Result

#: Characters XML 1.0 cannot carry, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _case(suite: ET.Element, r: Result, counts: dict) -> None:
    name = r.label + (f" ({r.api_version})" if r.api_version else "")
    case = ET.SubElement(suite, "testcase", name=_clean(name), classname=_clean(r.doc.file))
    counts["tests"] += 1
    located = [f"{r.doc.file}:{f.line}:{f.column}: {f.text}" for f in r.findings]
    if r.state == SKIPPED:
        tag = "failure" if r.fails else "skipped"
        counts["failures" if r.fails else "skipped"] += 1
        el = ET.SubElement(case, tag, message=_clean(r.reason or ""), type="skipped")
        el.text = _clean(f"{r.doc.file}:{r.line}: {r.label}: skipped ({r.reason})")
    elif r.fails:
        counts["failures"] += 1
        first = r.findings[0]
        el = ET.SubElement(case, "failure", message=_clean(first.text), type=first.rule)
        el.text = _clean("\n".join(located))
    elif located:
        ET.SubElement(case, "system-out").text = _clean("\n".join(located))


def document(report: Report) -> ET.Element:
    root = ET.Element("testsuites", name="workload-webhook validate")
    suites: dict[str, tuple[ET.Element, dict]] = {}

    def suite(file: str) -> tuple[ET.Element, dict]:
        if file not in suites:
            suites[file] = (ET.SubElement(root, "testsuite", name=_clean(file)),
                            {"tests": 0, "failures": 0, "errors": 0, "skipped": 0})
        return suites[file]

    for p in report.problems:
        el, counts = suite(p.file)
        case = ET.SubElement(el, "testcase", name=_clean(p.file), classname=_clean(p.file))
        ET.SubElement(case, "error", message=_clean(p.message), type="file-not-read").text = _clean(
            f"{p.file}:{p.line or 1}:{p.column or 1}: {p.message}")
        counts["tests"] += 1
        counts["errors"] += 1
    for r in report.results:
        if r.state != UNRELATED and report.shown(r):
            el, counts = suite(r.doc.file)
            _case(el, r, counts)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for el, counts in suites.values():
        for key, n in counts.items():
            el.set(key, str(n))
            if key in totals:
                totals[key] += n
    for key, n in totals.items():
        root.set(key, str(n))
    return root


def render(report: Report, out: TextIO, err: TextIO) -> None:
    root = document(report)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")
