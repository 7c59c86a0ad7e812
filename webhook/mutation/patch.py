"""RFC 6902 patches by diff (jsonpatch), which gets RFC 6901 escaping (`~1`,
`~0`) and missing parents right by construction."""
from __future__ import annotations

import jsonpatch


def diff(original: dict, mutated: dict) -> list[dict]:
    return jsonpatch.make_patch(original, mutated).patch


def apply(obj: dict, ops: list[dict]) -> dict:
    return jsonpatch.apply_patch(obj, ops, in_place=False)
