"""Dotted field paths with `[*]` fan-out, as written in the config
(`spec.replicatedJobs[*].scheduling.schedulingPolicy`), resolved against plain
JSON objects into concrete error paths (`spec.replicatedJobs[2].scheduling...`)."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from webhook.field import FieldError, Path, invalid

# A field name, then `[*]` (fan out over a list) or `[KEY]` (a map key such as an annotation's:
# label-key characters, at least one of them not a digit, so `[0]` is no index in disguise).
_SEGMENT = re.compile(r"([A-Za-z0-9_-]+)(?:\[(\*|[A-Za-z0-9._/-]*[A-Za-z._/-][A-Za-z0-9._/-]*)\])?")


def _map_key(key: str) -> str:
    """A map-key segment: a str that errors.Path renders as `[key]` (upstream's Path.Key)."""
    return Path().key(key)[-1]


def _is_key(name: str) -> bool:
    return type(name) is not str


class PathSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class FieldPath:
    """A parsed config path: each segment is (field name, fans out over a list)."""
    segments: tuple[tuple[str, bool], ...]

    @classmethod
    def parse(cls, text: str) -> "FieldPath":
        if not isinstance(text, str) or not text:
            raise PathSyntaxError("must be a non-empty dotted path")
        segments: list[tuple[str, bool]] = []
        pos = 0
        while True:
            m = _SEGMENT.match(text, pos)
            if not m:
                part = text[pos:].split(".")[0]
                raise PathSyntaxError(f"bad segment {part!r}: use field names, dots, `[*]` after a list "
                                      "and `[key]` after a map (metadata.annotations[example.com/key])")
            segments.append((m.group(1), m.group(2) == "*"))
            if m.group(2) not in (None, "*"):
                segments.append((_map_key(m.group(2)), False))
            pos = m.end()
            if pos == len(text):
                return cls(tuple(segments))
            if text[pos] != "." or pos + 1 == len(text):
                raise PathSyntaxError(f"bad path {text!r} at character {pos + 1}: segments are joined by single dots")
            pos += 1

    def __str__(self) -> str:
        out = ""
        for name, fan in self.segments:
            out += f"[{str.__str__(name)}]" if _is_key(name) else ("." if out else "") + name + ("[*]" if fan else "")
        return out

    # A path is parsed once from the config and asked these for every object judged:
    # kept on the (frozen) instance, they were a tenth of judging a JobSet.
    @functools.cached_property
    def wildcards(self) -> int:
        return sum(1 for _, fan in self.segments if fan)

    @functools.cached_property
    def _prefixes(self) -> tuple[str, ...]:
        return tuple(str(FieldPath(self.segments[:i + 1]))[:-3]
                     for i, (_, fan) in enumerate(self.segments) if fan)

    @functools.cached_property
    def _last_fan(self) -> int:
        return max((i for i, (_, fan) in enumerate(self.segments) if fan), default=-1)

    def list_prefixes(self) -> tuple[str, ...]:
        """The lists this path fans out over, each written as a path (`spec.jobs`, `spec.jobs[*].pods`)."""
        return self._prefixes

    def concrete(self, indices: tuple[int, ...]) -> Path:
        """The concrete path for one binding of the `[*]` indices (extra indices ignored)."""
        segs: list = []
        it = iter(indices)
        for name, fan in self.segments:
            segs.append(name)
            if fan:
                i = next(it, None)
                if i is None:       # the config check keeps this from happening; never a StopIteration
                    raise ValueError(f"{self} needs more list indices than {indices}")
                segs.append(i)
        return tuple.__new__(Path, segs)

    def bindings(self, obj: Any) -> tuple[list[tuple[int, ...]], list[FieldError]]:
        """Every index tuple the `[*]` segments take in `obj`. A missing list gives
        none; a node of the wrong JSON type is reported, not raised."""
        results: list[tuple[int, ...]] = []
        errors: list[FieldError] = []
        last_fan = self._last_fan

        def walk(node: Any, seg_i: int, path: Path, idx: tuple[int, ...]) -> None:
            if seg_i > last_fan:
                results.append(idx)
                return
            name, fan = self.segments[seg_i]
            if node is None:
                return
            if not isinstance(node, dict):
                errors.append(invalid(path, node, "must be of type object"))
                return
            child, cpath = node.get(name), path.child(name)
            if not fan:
                walk(child, seg_i + 1, cpath, idx)
                return
            if child is None:
                return
            if not isinstance(child, list):
                errors.append(invalid(cpath, child, "must be of type list"))
                return
            for i, item in enumerate(child):
                walk(item, seg_i + 1, cpath.index(i), idx + (i,))

        walk(obj, 0, Path(), ())
        return results, errors


def parse_into(raw: Any, where: Path, errors: list[FieldError]) -> FieldPath | None:
    """A config path, or None with the problem appended at `where` (the one parser of config paths)."""
    try:
        return FieldPath.parse(raw)
    except PathSyntaxError as exc:
        errors.append(invalid(where, raw, str(exc)))
        return None


def within_fanout(p: FieldPath, outer: FieldPath) -> bool:
    """`p` walks a prefix of the lists `outer` walks, so `outer`'s indices bind all of its `[*]`."""
    mine, theirs = p.list_prefixes(), outer.list_prefixes()
    return mine == theirs[:len(mine)]


class WrongType(Exception):
    def __init__(self, error: FieldError):
        self.error = error


def get(obj: Any, path: Path) -> Any:
    """The value at a concrete path, None when any part is missing.
    Raises WrongType when a parent on the way is not a map/list."""
    node = obj
    for n, seg in enumerate(path):
        if node is None:
            return None
        if isinstance(seg, int):
            if not isinstance(node, list):
                raise WrongType(invalid(Path(*path[:n]), node, "must be of type list"))
            node = node[seg] if seg < len(node) else None
        else:
            if not isinstance(node, dict):
                raise WrongType(invalid(Path(*path[:n]), node, "must be of type object"))
            node = node.get(seg)
    return node


def get_or_none(obj: Any, path: Path) -> Any:
    try:
        return get(obj, path)
    except WrongType:
        return None


def item_name(item: Any) -> str | None:
    return item.get("name") if isinstance(item, dict) and isinstance(item.get("name"), str) else None


#: id(list) -> (the list, its items' first index by name, or None when no item has a name).
#: Every item of a fanned-out list asks for its stored twin: without the index, a
#: list of N named items cost N² (a JobSet update with 4,000 replicatedJobs: 1.7 s).
#: The list itself is held with its entry, so its id cannot be reused meanwhile.
_NAME_INDEXES: dict[int, tuple[list, dict[str, int] | None]] = {}
_INDEXED_FROM = 16          # shorter lists are indexed afresh each time, not kept
_INDEXES_KEPT = 4


def _name_index(items: list) -> dict[str, int] | None:
    cached = len(items) >= _INDEXED_FROM
    hit = _NAME_INDEXES.get(id(items)) if cached else None
    if hit is not None and hit[0] is items:
        return hit[1]
    index: dict[str, int] = {}
    for j, o in enumerate(items):
        n = item_name(o)
        if n is not None and n not in index:
            index[n] = j
    if cached:
        if len(_NAME_INDEXES) >= _INDEXES_KEPT:
            _NAME_INDEXES.clear()
        _NAME_INDEXES[id(items)] = (items, index or None)
    return index or None


def old_indices(obj: dict, old: dict, fp: FieldPath, idx: tuple[int, ...]) -> tuple[int, ...] | None:
    """Where item `idx` of a fanned-out list was in the stored object: matched by
    `name` when the items have one (so removing or reordering items does not
    compare strangers), else by position. None: the item is new."""
    new_path: list = []
    old_path: list = []
    it = iter(idx)
    out: list[int] = []
    for name, fan in fp.segments:
        new_path.append(name)
        old_path.append(name)
        if not fan:
            continue
        i = next(it, None)
        if i is None:
            return None
        new_list = get_or_none(obj, Path(*new_path))
        old_list = get_or_none(old, Path(*old_path))
        if not isinstance(new_list, list) or not isinstance(old_list, list) or i >= len(new_list):
            return None
        key = item_name(new_list[i])
        names = _name_index(old_list) if key is not None else None
        if names is not None:
            j = names.get(key)
        else:
            j = i if i < len(old_list) else None
        if j is None:
            return None
        out.append(j)
        new_path.append(i)
        old_path.append(j)
    return tuple(out)
