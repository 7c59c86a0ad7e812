"""A large YAML stream read on several cores: cut at document boundaries
(`---` lines), each part composed and built by webhook.manifests.yaml_documents in a
forked process (webhook.forks), the objects sent back marshalled, their spans moved to where
the part starts. libyaml holds the interpreter for the whole parse, so threads
would not help; sending a part costs a tenth of parsing it.

Only where it is safe and worth it: a stream of at least MIN_PART_CHARS per
part, more than one usable core, a safe fork (webhook.forks.can_fork), no directive (`%YAML`, `%TAG` apply to the next document, which a
cut could separate from them), and lines ending in \n or \r\n only. The result is the sequential one: the same
objects in the same order, and the first error in file order."""
from __future__ import annotations

import marshal
import pickle
import re
from typing import Any

import yaml

from webhook import forks
from webhook.manifests.yaml_documents import DuplicateKey, Span, TooLarge, documents

MIN_PART_CHARS = 1_500_000
_DOCUMENT_START = re.compile(r"^---(?=[ \t\r\n]|$)", re.M)
#: Line breaks libyaml counts that a count of "\n" would miss.
_OTHER_BREAKS = re.compile("\r(?!\n)|[\x85\u2028\u2029]")


def _other_breaks(text: str) -> bool:
    """Whether libyaml would count lines that "\n" does not end (a membership test is a memchr:
    fast; the expression runs only when a \r or one of the others is there)."""
    return any(c in text for c in "\r\x85\u2028\u2029") and _OTHER_BREAKS.search(text) is not None


def cuts(text: str, parts: int) -> list[int]:
    """Where the parts start: 0, then the `---` line at or after each equal share."""
    out = [0]
    for k in range(1, parts):
        m = _DOCUMENT_START.search(text, max(out[-1] + 1, len(text) * k // parts))
        if m is None:
            break
        out.append(m.start())
    return out


def _line_of(text: str, index: int, known: tuple[int, int]) -> int:
    at, line = known
    return line + text.count("\n", at, index)


def _parse_part(text: str, budget: int) -> tuple[str, Any]:
    """("ok", [(object, span tuple, item span tuples)]) or ("error", what the parent raises again)."""
    try:
        out = []
        for obj, span, items in documents(text, budget):
            out.append((obj, (span.start, span.end, span.line, span.column),
                        None if items is None else [(s.start, s.end, s.line, s.column) for s in items]))
        return "ok", out
    except DuplicateKey as exc:
        mark = exc.problem_mark
        return "duplicate", (exc.key, exc.first_line, (mark.index, mark.line, mark.column))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = (mark.index, mark.line, mark.column) if mark is not None else None
        return "yaml", (exc.context, exc.problem or str(exc), where)
    except TooLarge as exc:
        return "large", str(exc)
    except RecursionError:
        return "deep", None
    except yaml.YAMLError as exc:
        return "yaml", (None, str(exc), None)


def _encode(result: tuple[str, Any]) -> bytes:
    """marshal where it can (five times faster than pickle for dicts, lists and strings, and
    the parent is the same interpreter); pickle for what it cannot (an explicit !!timestamp)."""
    try:
        return b"m" + marshal.dumps(result)
    except ValueError:
        return b"p" + pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


def _decode(data: bytes) -> tuple[str, Any]:
    return marshal.loads(memoryview(data)[1:]) if data[:1] == b"m" else pickle.loads(memoryview(data)[1:])


def _shifted(result: tuple[str, Any], index: int, line: int) -> list[tuple[Any, Span, list[Span] | None]]:
    """A part's documents with spans in the whole stream's terms, or its error raised."""
    kind, value = result
    if kind == "ok":
        def span(t):   # lines and indices move; a part starts a line, so columns stay
            return Span(t[0] + index, t[1] + index, t[2] + line, t[3])
        return [(obj, span(s), None if items is None else [span(i) for i in items]) for obj, s, items in value]
    if kind == "large":
        raise TooLarge(value)
    if kind == "deep":
        raise RecursionError()
    if kind == "duplicate":
        key, first_line, where = value
        raise DuplicateKey(key, first_line + line, yaml.Mark("<stream>", where[0] + index, where[1] + line, where[2],
                                                             None, None))
    context, problem, where = value
    mark = None if where is None else yaml.Mark("<stream>", where[0] + index, where[1] + line, where[2], None, None)
    raise yaml.MarkedYAMLError(context, None, problem, mark)


def plan(text: str) -> list[int] | None:
    """Where the parts of `text` start, or None when it is read in one piece."""
    parts = forks.parts(len(text), MIN_PART_CHARS)
    if parts < 2 or text.startswith("%") or "\n%" in text or _other_breaks(text):
        return None
    starts = cuts(text, parts)
    return starts if len(starts) > 1 else None


def read(text: str, budget: int) -> list[tuple[Any, Span, list[Span] | None]]:
    """Every document of `text`, as webhook.manifests.yaml_documents.documents gives them."""
    starts = plan(text)
    if starts is None:
        return list(documents(text, budget))
    ends = [*starts[1:], len(text)]
    results = forks.run_parts(lambda k: _parse_part(text[starts[k]:ends[k]], budget), len(starts), _encode, _decode)
    out, known = [], (0, 0)
    for start, result in zip(starts, results):
        line = _line_of(text, start, known)
        known = (start, line)
        out += _shifted(result, start, line)
    return out
