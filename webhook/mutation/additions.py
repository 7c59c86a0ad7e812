"""JSON Patch `add` operations built from what a mutation adds, instead of
diffing a deep copy of the whole object: a Pod with 50 containers costs what
is added, not its size. The object itself is never changed.

`Additions` finds the container of each addition in the object. Where a map or
list on the way is missing (or null), one `add` creates it, and later additions
below it go into that value; otherwise each member is one `add` (maps) and each
item one `/-` append (lists), so what was there stays."""
from __future__ import annotations

from typing import Any


def pointer(*segments: Any) -> str:
    """An RFC 6901 pointer (`~` and `/` escaped in keys)."""
    return "".join("/" + _escaped(s) for s in segments)


def _escaped(segment: Any) -> str:
    text = str(segment)
    return text.replace("~", "~0").replace("/", "~1") if "~" in text or "/" in text else text


class Additions:
    """The `add` operations that put members and items into `obj` at paths."""

    def __init__(self, obj: Any):
        self.obj = obj
        self.ops: list[dict] = []
        # path -> (the container there, True when a value of `ops` creates it, its pointer)
        self._known: dict[tuple, tuple[Any, bool, str]] = {(): (obj, False, "")}

    def member(self, path: tuple, key: str, value: Any) -> None:
        """Add `key: value` to the map at `path`."""
        container, created, at = self._container(path, dict)
        if created:
            container[key] = value
        else:
            self.ops.append({"op": "add", "path": at + "/" + _escaped(key), "value": value})

    def item(self, path: tuple, value: Any) -> None:
        """Append `value` to the list at `path`."""
        container, created, at = self._container(path, list)
        if created:
            container.append(value)
        else:
            self.ops.append({"op": "add", "path": at + "/-", "value": value})

    def _container(self, path: tuple, kind: type) -> tuple[Any, bool, str]:
        known = self._known
        found = known.get(path)
        if found is not None:
            return found
        # From the longest known prefix down (a loop, not a call per segment: this was a fifth
        # of a Pod join): each segment's container is a list where the next segment is an index.
        n = len(path) - 1
        while (found := known.get(path[:n])) is None:
            n -= 1
        node, created, at = found
        last = len(path) - 1
        for i in range(n, len(path)):
            segment, parent = path[i], node
            want = kind if i == last else (list if isinstance(path[i + 1], int) else dict)
            at += "/" + _escaped(segment)
            if created:                     # inside a value this patch creates: no op of its own
                node = parent[segment] = want()
            else:
                node = parent.get(segment) if isinstance(parent, dict) else _item(parent, segment)
                if not isinstance(node, want):  # missing, null or another type: one add creates it
                    node, created = want(), True
                    self.ops.append({"op": "add", "path": at, "value": node})
            known[path[:i + 1]] = found = (node, created, at)
        return found


def _item(node: Any, segment: Any) -> Any:
    if isinstance(node, list) and isinstance(segment, int) and 0 <= segment < len(node):
        return node[segment]
    return None
