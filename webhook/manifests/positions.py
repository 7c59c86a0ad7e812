"""Where a field sits in its file: the line and column (1-based) of a field
path, as `file:line:column` for editors, annotations and SARIF.

Found lazily, only for the objects that have something to report, so reading
keeps no YAML nodes. A YAML document (or a List's item) is composed again from
its span of the text; a JSON file is walked with the standard library's own
decoder, which skips what is off the path. Where the path leaves the object (a
Required field that is absent), the deepest part that is there is named: the
parent mapping's key, or the item."""
from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from json.decoder import scanstring
from typing import Any, Sequence

import yaml
from yaml.nodes import MappingNode, SequenceNode

from webhook.manifests.yaml_documents import Loader, Span

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_CACHED_NODES = 16


class Source:
    """One file's text, shared by its documents, and what was found in it."""

    __slots__ = ("text", "is_json", "_nodes", "_arrays", "_lines")

    def __init__(self, text: str, is_json: bool):
        self.text, self.is_json = text, is_json
        self._nodes: dict[int, Any] = {}
        self._arrays: dict[int, list[int]] = {}
        self._lines: list[int] | None = None

    def node(self, span: Span):
        """The node of the document or item at `span`, composed again (None if it cannot be)."""
        if span.start not in self._nodes:
            if len(self._nodes) >= _CACHED_NODES:
                self._nodes.clear()
            # The first line is padded to its column, so block indentation reads as in the file.
            try:
                self._nodes[span.start] = yaml.compose(" " * span.column + self.text[span.start:span.end],
                                                       Loader=Loader)
            except (yaml.YAMLError, RecursionError):     # e.g. a %TAG handle declared before the document
                self._nodes[span.start] = None
        return self._nodes[span.start]

    def line_column(self, index: int) -> tuple[int, int]:
        """1-based line and column of a character index (JSON counts lines by \\n)."""
        if self._lines is None:
            self._lines = [0] + [m.end() for m in re.finditer("\n", self.text)]
        line = bisect.bisect_right(self._lines, index) - 1
        return line + 1, index - self._lines[line] + 1

    def array_items(self, at: int) -> list[int]:
        """Where each element of the JSON array at `at` starts (kept: a List's items are asked often)."""
        if at not in self._arrays:
            text, starts = self.text, []
            i = _SPACE.match(text, at + 1).end()
            while i < len(text) and text[i] != "]":
                starts.append(i)
                i = _SPACE.match(text, _DECODER.raw_decode(text, i)[1]).end()
                if text[i:i + 1] == ",":
                    i = _SPACE.match(text, i + 1).end()
            self._arrays[at] = starts
        return self._arrays[at]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where one object of a file is: the YAML span of its document or List item,
    or, in JSON, its path from the top of the file (`("items", 3)` in a List)."""
    source: Source
    span: Span | None = None
    within: tuple = ()

    def position(self, path: Sequence = ()) -> tuple[int, int]:
        """1-based (line, column) of `path` in this object."""
        if self.source.is_json:
            try:
                return self.source.line_column(_json_index(self.source, (*self.within, *path)))
            except (ValueError, IndexError):       # the text was read as JSON once: not expected
                return 1, 1
        span, full = self.span, (*self.within, *path)
        node = self.source.node(span) if full else None
        if node is None:
            return span.line + 1, span.column + 1
        mark = _node_mark(node, full)
        return span.line + mark.line + 1, mark.column + 1


def _node_mark(node, path: Sequence):
    mark = node.start_mark
    for segment in path:
        if isinstance(node, MappingNode) and isinstance(segment, str):
            pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == segment), None)
            if pair is None:
                break
            mark, node = pair[0].start_mark, pair[1]
        elif isinstance(node, SequenceNode) and isinstance(segment, int) and 0 <= segment < len(node.value):
            node = node.value[segment]
            mark = node.start_mark
        else:
            break
    return mark


def _json_index(source: Source, path: Sequence) -> int:
    """The index of the key (or item) the path ends at, walking the text."""
    text = source.text
    i = at = _SPACE.match(text).end()
    for segment in path:
        if text[i:i + 1] == "{" and isinstance(segment, str):
            i = _SPACE.match(text, i + 1).end()
            while text[i:i + 1] == '"':
                key, j = scanstring(text, i + 1)
                j = _SPACE.match(text, _SPACE.match(text, j).end() + 1).end()     # past the colon
                if key == segment:
                    at, i = i, j
                    break
                i = _SPACE.match(text, _DECODER.raw_decode(text, j)[1]).end()
                if text[i:i + 1] == ",":
                    i = _SPACE.match(text, i + 1).end()
            else:
                return at
        elif text[i:i + 1] == "[" and isinstance(segment, int):
            items = source.array_items(i)
            if not 0 <= segment < len(items):
                return at
            at = i = items[segment]
        else:
            return at
    return at

