"""The size of one group instance (what bounds its `gang.minCount`), from a
webhook.semantics.Size: a count at a path, or a sum of products over a list."""
from __future__ import annotations

from typing import Any

from webhook.field import FieldError, Path, invalid
from webhook.paths import get_or_none, item_name
from webhook.semantics import Size


WRONG_TYPE = "must be of type integer: it is the group's size, which bounds gang.minCount"


def _count(value: Any) -> int | None:
    if isinstance(value, float) and value.is_integer():
        return int(value)           # YAML `8.0` read offline; JSON Schema's "integer" accepts it too
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _counted(raw: Any, path: Path, errors: list[FieldError] | None) -> int | None:
    """A size field's value; one that is set but not an integer is an error, not an unknown size."""
    value = _count(raw)
    if value is None and errors is not None:
        errors.append(invalid(path, raw, WRONG_TYPE))
    return value


def evaluate(obj: Any, size: Size, idx: tuple[int, ...],
             errors: list[FieldError] | None = None) -> tuple[int | None, str]:
    """(the size or None when it cannot be known, how to name it in a message).
    With `errors`, a size field of the wrong type is reported there."""
    if size.path is not None:
        path = size.path.concrete(idx)
        raw = get_or_none(obj, path)
        value = size.default if raw is None else _counted(raw, path, errors)
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
    list_path = size.sum.concrete(())
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return None, size.describe()
        if chosen is not None and item_name(item) not in chosen:
            continue
        product = 1
        for name, rel in size.factors:
            raw = get_or_none(item, rel)
            factor = defaults.get(name) if raw is None else _counted(raw, list_path.index(i).child(*rel), errors)
            if factor is None:
                return None, size.describe()
            product *= factor
        total += product
    return total, size.describe()


def label(size: Size, idx: tuple[int, ...]) -> Path | str:
    return size.path.concrete(idx) if size.path is not None else size.describe()
