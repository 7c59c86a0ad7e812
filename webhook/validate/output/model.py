"""What `validate` found, as every output format reads it: one Result per
object (its state, its verdict, whether it fails the run), the problems of
files that could not be read, and the Summary whose counts explain the exit
code. A violation's line and column are found only when a format asks
(webhook.manifests.positions), so objects without findings cost nothing more."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TextIO
from webhook.enforcement import fails
from webhook.field import FieldError
from webhook.manifests import Document, FileProblem, identity
from webhook.verdict import Verdict

VALID, INVALID, WARNED, AUDITED, SKIPPED, UNRELATED = "valid", "invalid", "warned", "audited", "skipped", "unrelated"
#: A Verdict's action -> the state of a judged object.
_STATE = {None: VALID, "deny": INVALID, "warn": WARNED, "audit": AUDITED}


def gate_hint(gate: str) -> str:
    """What turns a feature gate on offline: the config's `featureGates` stands for the cluster's."""
    return f"featureGates.{gate}: true in --config, for a cluster with the gate on"


def shown(error: FieldError) -> str:
    """A violation as a report line says it: as kubectl prints it, then, for a refusal of
    a gate that is off, the hint naming the config key (the error itself stays the API server's)."""
    return f"{error} (hint: {gate_hint(error.gate)})" if error.gate else str(error)


@dataclass(frozen=True)
class Finding:
    """One line of a report: a violation (deny, warn or audit, with its FieldError)
    or a warning of the rules (`note`), where it is in the file."""
    level: str                      # deny | warn | audit | note
    text: str                       # as kubectl prints it: `field: Invalid value: ...: detail (RULE)`, and a hint
    line: int
    column: int
    error: FieldError | None = None
    warns: str | None = None        # a warning that is a finding of this rule (BRG-1): level warn

    @property
    def hint(self) -> str | None:
        """For a gate that is off, the config key that turns it on."""
        return gate_hint(self.error.gate) if self.error is not None and self.error.gate else None

    def fails(self, fail_on: str) -> bool:
        """It fails a run at `--fail-on fail_on` (a warning of the rules never does)."""
        return self.level != "note" and fails(self.level, fail_on)

    @property
    def rule(self) -> str:
        """The own rule id, else the upstream reason (`FieldValueInvalid`); `warning` for a note."""
        if self.error is None:
            return self.warns or "warning"
        return self.error.rule or self.error.reason


@dataclass
class Result:
    doc: Document
    state: str
    verdict: Verdict = field(default_factory=Verdict)
    reason: str | None = None       # why a skipped or unrelated object is not judged
    fails: bool = False             # it makes the run exit 1
    hint: str | None = None         # the flag or config key that would judge it (`--profile jobset`)
    warns: str | None = None        # the rule whose findings its warnings are (a foreign PodGroup: BRG-1)

    @property
    def action(self) -> str | None:
        """The strictest action of its violations; a foreign PodGroup's warnings are `warn`."""
        return self.verdict.action or ("warn" if self.warns and self.verdict.warnings else None)

    @property
    def api_version(self) -> str | None:
        value = self.doc.obj.get("apiVersion") if isinstance(self.doc.obj, dict) else None
        return None if value is None else str(value)

    @cached_property
    def identity(self) -> tuple[str, str, str | None, str | None]:
        """(kind, `namespace/name` or name, namespace, name) for the report."""
        _, kind, ns, name = identity(self.doc.obj)
        ns, name = ns or None, name or None
        return kind or "<no kind>", f"{ns}/{name or ''}" if ns else (name or "<no name>"), ns, name

    @property
    def label(self) -> str:
        """`TrainJob ml/llama`, as the text lines name an object."""
        kind, ident, _, _ = self.identity
        return f"{kind} {ident}"

    @property
    def line(self) -> int:
        """The object's first line in its file."""
        return self.position(())[0]

    def position(self, path) -> tuple[int, int]:
        origin = self.doc.origin
        return origin.position(path) if origin is not None else (1, 1)

    @cached_property
    def findings(self) -> list[Finding]:
        v, out = self.verdict, []
        for level, errors in (("deny", v.errors), ("warn", v.warned), ("audit", v.audits)):
            for e in errors:
                out.append(Finding(level, shown(e), *self.position(e.field), error=e))
        for w in v.warnings:
            # A rule's warning is a FieldWarning: placed at its path, never by parsing its text.
            out.append(Finding("warn" if self.warns else "note", w, *self.position(getattr(w, "path", ())),
                               warns=self.warns))
        return out


@dataclass
class Summary:
    checked: int = 0
    invalid: int = 0
    warned: int = 0
    audited: int = 0
    skipped: int = 0
    unrelated: int = 0
    unread: int = 0                 # files that could not be read or parsed
    failing: dict[str, int] = field(default_factory=dict)   # state -> objects of it that fail the run

    @property
    def exit_code(self) -> int:
        """2 when a file could not be read or parsed (an input error, as a path that is not there:
        the gate did not see all of it), else 1 when something fails the run, else 0."""
        return 2 if self.unread else 1 if any(self.failing.values()) else 0


@dataclass
class Report:
    results: list[Result]
    problems: list[FileProblem]
    fail_on: str = "deny"
    fail_on_skipped: bool = False
    quiet: bool = False
    tool_version: str = "unknown"

    @cached_property
    def summary(self) -> Summary:
        s = Summary(unread=len({p.file for p in self.problems}))
        for r in self.results:
            if r.state in (VALID, INVALID, WARNED, AUDITED):
                s.checked += 1
            if r.state != VALID:
                setattr(s, r.state, getattr(s, r.state) + 1)
            if r.fails:
                s.failing[r.state] = s.failing.get(r.state, 0) + 1
        return s

    def shown(self, result: Result) -> bool:
        """Whether a format lists this object: under --quiet only what has findings or fails."""
        return not self.quiet or result.fails or bool(result.findings)

    @property
    def hints(self) -> dict[str, list[str]]:
        """flag -> the kinds of the unrelated objects it would judge (`--profile jobset`: [JobSet])."""
        out: dict[str, list[str]] = {}
        for r in self.results:
            if r.hint:
                kinds = out.setdefault(r.hint, [])
                if r.identity[0] not in kinds:
                    kinds.append(r.identity[0])
        return out


def judged(doc: Document, verdict: Verdict, fail_on: str, warns: str | None = None) -> Result:
    """A judged object's Result; with `warns`, the engine's warnings are findings of that rule (warned)."""
    result = Result(doc, VALID, verdict, warns=warns)
    result.state, result.fails = _STATE[result.action], fails(result.action, fail_on)
    return result


def summary_lines(report: Report) -> list[str]:
    """The counts, then the exit code and what makes it: the text and github formats end with these."""
    s = report.summary
    counts = (f"{s.checked} object(s) checked, {s.invalid} invalid, {s.skipped} skipped (suspicious), "
              f"{s.unrelated} unrelated, {s.warned} warned, {s.audited} audited")
    if s.unread:
        counts += f", {s.unread} file(s) not read"
    why = [f"{n} {state}" + ("" if state == INVALID else f" (--fail-on-skipped)" if state == SKIPPED
                             else f" (--fail-on {report.fail_on})")
           for state, n in s.failing.items() if n]
    if s.unread:
        why.insert(0, f"{s.unread} file(s) not read")
    if why:
        verdict = f"exit {s.exit_code} because of " + ", ".join(why)
    else:
        verdict = f"exit 0: nothing fails at --fail-on {report.fail_on}"
        if s.skipped:
            verdict += f"; --fail-on-skipped makes the {s.skipped} skipped fail"
    lines = [counts, verdict]
    for flag, kinds in report.hints.items():
        lines.append(f"hint: {', '.join(kinds)} objects were not judged: {flag} judges them")
    return lines


def write_lines(lines: list[str], report: Report, out: TextIO, err: TextIO) -> None:
    """A line format's output: its lines, then (unless --quiet) the summary on stderr."""
    if lines:
        out.write("\n".join(lines) + "\n")
    if not report.quiet:
        err.write("\n".join(summary_lines(report)) + "\n")
