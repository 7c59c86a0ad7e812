"""The size of one group instance (what bounds its `gang.minCount`), from a
webhook.semantics.Size: a count at a path, or a sum of products over a list."""
from __future__ import annotations

from typing import Any

from webhook.errors import Path
from webhook.paths import get_or_none, item_name
from webhook.semantics import Size


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def evaluate(obj: Any, size: Size, idx: tuple[int, ...]) -> tuple[int | None, str]:
    """(the size or None when it cannot be known, how to name it in a message)."""
    if size.path is not None:
        path = size.path.concrete(idx)
        raw = get_or_none(obj, path)
        value = size.default if raw is None else _count(raw)
        return value, str(path)
    items = get_or_none(obj, size.sum.concrete(()))
    if not isinstance(items, list):
        items = []
    chosen = None
    if size.only is not None:
        names = get_or_none(obj, size.only.concrete(idx))
        chosen = {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()
    defaults = dict(size.defaults)
    total = 0
    for item in items:
        if not isinstance(item, dict):
            return None, size.describe()
        if chosen is not None and item_name(item) not in chosen:
            continue
        product = 1
        for name, rel in size.factors:
            raw = get_or_none(item, rel)
            factor = defaults.get(name) if raw is None else _count(raw)
            if factor is None:
                return None, size.describe()
            product *= factor
        total += product
    return total, size.describe()


def label(size: Size, idx: tuple[int, ...]) -> Path | str:
    return size.path.concrete(idx) if size.path is not None else size.describe()
