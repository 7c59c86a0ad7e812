"""Strict YAML documents, fast: each document of a stream as the object it
holds and where it sits in the text (its span, for webhook.manifests.positions).

libyaml composes the nodes (CSafeLoader when present); the objects are built
from the nodes here in one pass instead of by PyYAML's constructor, which took
about half the load time (generators and state per node). The pass also does
what kubectl's strict decoding asks:
- a key given twice in a mapping is an error (PyYAML keeps the last silently);
- timestamps stay strings (`2026-11-29T00:00:00Z`), as the API server reads them;
- aliases are counted as expanded: a document that expands past `budget`
  nodes (a "billion laughs") is refused while it is built, as kube-apiserver's
  YAML decoder refuses excessive aliasing; an alias of its own ancestor too.
A document with a merge key (`<<`) or an explicit collection tag (`!!set`,
`!!omap`, a local tag) goes through PyYAML's own constructor instead, which
knows their meaning (or refuses them)."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterator

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"
_IMPLICIT = {first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:timestamp"]
             for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


class TooLarge(ValueError):
    pass


@functools.lru_cache(maxsize=4096)
def _resolve(kind, value, implicit) -> str:
    """Resolver.resolve without path resolvers (safe YAML has none). The parser
    calls it for every node, and keys and small values repeat: a hit in the
    cache never leaves C (a third of composing a manifest stream otherwise)."""
    if kind is ScalarNode:
        if implicit[0]:
            for tag, regexp in _IMPLICIT.get(value[:1], ()):
                if regexp.match(value):
                    return tag
        return _STR
    return _SEQ if kind is SequenceNode else _MAP


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):   # libyaml when present: ~12x faster
    """Safe YAML without timestamps; a key given twice is an error (also on the stock path)."""

    yaml_implicit_resolvers = _IMPLICIT
    resolve = staticmethod(_resolve)
    # Path resolvers would need these; safe YAML has none, and the parser calls both
    # for every node: C callables that ignore their arguments cost less than Python's no-op.
    descend_resolver = staticmethod({}.get)          # (parent, index) -> index, unused
    ascend_resolver = staticmethod(tuple)            # () -> (), unused

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            _check_duplicates(self, node)
        return super().construct_mapping(node, deep=deep)


def _check_duplicates(loader, node: MappingNode) -> None:
    seen: dict = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node.start_mark)
        except TypeError:            # an unhashable key: the constructor reports it
            continue
        if first is not key_node.start_mark:
            raise _duplicate(key, first, key_node)


class DuplicateKey(yaml.constructor.ConstructorError):
    """A key given twice in a mapping; `first_line` (0-based) is where it was first."""

    def __init__(self, key: str, first_line: int, mark):
        self.key, self.first_line = key, first_line
        super().__init__(None, None, f"duplicate key {key} (first at line {first_line + 1})", mark)


def _duplicate(key: Any, first, key_node) -> DuplicateKey:
    return DuplicateKey(repr(key), first.line, key_node.start_mark)


@dataclass(frozen=True)
class Span:
    """Where a document's root node sits: character indices into the text (as
    libyaml counts them) and its first line and column, 0-based."""
    start: int
    end: int
    line: int
    column: int


class _Stock(Exception):
    """This document needs PyYAML's own constructor."""


def documents(text: str, budget: int) -> Iterator[tuple[Any, Span, list[Span] | None]]:
    """(object, span, the spans of its items if it is a `kind: List`) of each document
    of `text`. Raises yaml.YAMLError, TooLarge, RecursionError."""
    loader = Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            start, end = node.start_mark, node.end_mark
            span = Span(start.index, end.index, start.line, start.column)
            try:
                obj = _Builder(loader, budget).build(node)
            except _Stock:
                obj = loader.construct_document(node)
                _Builder(loader, budget).count(obj)
            yield obj, span, _item_spans(node) if is_list(obj) else None
    finally:
        loader.dispose()


class _Builder:
    """Objects from nodes. An aliased node is built once and shared, as PyYAML
    does; `seen` counts the nodes as expanded, so aliases cost their size."""

    __slots__ = ("loader", "budget", "seen", "memo")

    def __init__(self, loader, budget: int):
        self.loader, self.budget, self.seen, self.memo = loader, budget, 0, {}

    def _grow(self, n: int) -> None:
        self.seen += n
        if self.seen > self.budget:
            raise TooLarge(f"a document expands to more than {self.budget} nodes (YAML aliases?)")

    def build(self, node) -> Any:
        """The object of `node`. A string scalar, the most common node by far, is
        taken in place by its parent (no call); the budget is checked per collection."""
        cls = node.__class__
        if cls is ScalarNode:
            self.seen += 1
            if node.tag == _STR:
                return node.value
            construct = self.loader.yaml_constructors.get(node.tag)
            if construct is None:
                raise _Stock()
            return construct(self.loader, node)
        known = self.memo.get(id(node))
        if known is not None:
            obj, size = known
            if size is None:
                raise yaml.constructor.ConstructorError(None, None, "an alias of its own ancestor (a recursive "
                                                        "structure)", node.start_mark)
            self._grow(size)
            return obj
        before = self.seen
        build = self.build
        if cls is SequenceNode:
            if node.tag != _SEQ:
                raise _Stock()
            out: Any = []
            self.memo[id(node)] = (out, None)
            for item in node.value:
                if item.__class__ is ScalarNode and item.tag == _STR:
                    self.seen += 1
                    out.append(item.value)
                else:
                    out.append(build(item))
        else:
            if node.tag != _MAP:
                raise _Stock()
            out = {}
            self.memo[id(node)] = (out, None)
            for key_node, value_node in node.value:
                if key_node.__class__ is ScalarNode and key_node.tag == _STR:
                    self.seen += 1
                    key = key_node.value
                    there = key in out
                else:
                    if key_node.tag == _MERGE:
                        raise _Stock()
                    key = build(key_node)
                    try:
                        there = key in out
                    except TypeError:
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", node.start_mark, "found unhashable key",
                            key_node.start_mark) from None
                if there:
                    first = next(k for k, _ in node.value if k is not key_node and build(k) == key)
                    raise _duplicate(key, first.start_mark, key_node)
                if value_node.__class__ is ScalarNode and value_node.tag == _STR:
                    self.seen += 1
                    out[key] = value_node.value
                else:
                    out[key] = build(value_node)
        self._grow(1)
        self.memo[id(node)] = (out, self.seen - before)
        return out

    def count(self, obj: Any) -> None:
        """The expanded size of an object PyYAML built, against the same budget."""
        stack = [obj]
        while stack:
            node = stack.pop()
            self._grow(1)
            if isinstance(node, dict):
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)


def is_list(obj: Any) -> bool:
    """A `kind: List` (kubectl's), whose items are the objects."""
    return isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list)


def _item_spans(root) -> list[Span] | None:
    items = next((v for k, v in root.value if getattr(k, "value", None) == "items"), None) \
        if isinstance(root, MappingNode) else None
    if not isinstance(items, SequenceNode):
        return None
    return [Span(n.start_mark.index, n.end_mark.index, n.start_mark.line, n.start_mark.column) for n in items.value]
