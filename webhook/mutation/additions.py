"""JSON Patch `add` operations built from what a mutation adds, instead of
diffing a deep copy of the whole object: a Pod with 50 containers costs what
is added, not its size. The object itself is never changed.

Each helper adds below a parent that may be missing or null: then one `add`
creates the parent with everything that goes in it, otherwise one `add` per
member (maps) or one `/-` append per item (lists), so what was there stays."""
from __future__ import annotations

from typing import Any


def pointer(*segments: Any) -> str:
    """An RFC 6901 pointer (`~` and `/` escaped in keys)."""
    return "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in segments)


def add_members(ops: list[dict], parent: Any, path: tuple, members: dict) -> None:
    """Add `members` to the map at `path` (its current value `parent`, maybe missing or null)."""
    if not members:
        return
    if not isinstance(parent, dict):
        ops.append({"op": "add", "path": pointer(*path), "value": dict(members)})
        return
    for key, value in members.items():
        ops.append({"op": "add", "path": pointer(*path, key), "value": value})


def append_items(ops: list[dict], parent: Any, path: tuple, items: list) -> None:
    """Append `items` to the list at `path` (its current value `parent`, maybe missing or null)."""
    if not items:
        return
    if not isinstance(parent, list):
        ops.append({"op": "add", "path": pointer(*path), "value": list(items)})
        return
    for item in items:
        ops.append({"op": "add", "path": pointer(*path, "-"), "value": item})
