"""The JSON Schemas (2020-12) published in the top-level `schemas/` folder
(shipped inside the package), and the translation of
jsonschema's findings into field errors, so no raw jsonschema message reaches
a user. The schemas describe shape (types, int32 ranges); the meaning of each
block (unions, limits, update rules) lives in its module under webhook.blocks.

Every admission request is checked, so the common case (a well-formed object)
takes a fast path: the same schema compiled to Python by fastjsonschema
(~15x faster than jsonschema here, see bench/). Only an object it rejects is
walked by jsonschema, which reports every problem with its path.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from itertools import islice
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from webhook.field import OMIT, FieldError, Path, ROOT, invalid, not_supported, required, too_many, duplicate

# Hostile objects can hold thousands of structural mistakes: report the first few.
MAX_STRUCTURAL_ERRORS = 20


def _root():
    """The published schemas: packaged as webhook/schemas/published in a wheel
    (pyproject maps the top-level `schemas/` there), read in place from a checkout."""
    packaged = resources.files(__name__).joinpath("published")
    if packaged.is_dir():
        return packaged
    return resources.files(__name__).joinpath("..", "..", "schemas")


def _files():
    root = _root()
    for entry in root.iterdir():
        if entry.name.endswith(".schema.json"):
            yield entry.name.removesuffix(".schema.json"), entry
    for entry in root.joinpath("blocks").iterdir():
        if entry.name.endswith(".schema.json"):
            yield "blocks/" + entry.name.removesuffix(".schema.json"), entry


@lru_cache(maxsize=None)
def all_schemas() -> dict[str, dict]:
    return {name: json.loads(entry.read_text()) for name, entry in _files()}


@lru_cache(maxsize=None)
def _registry() -> Registry:
    return Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in all_schemas().values()
    )


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(all_schemas()[name], registry=_registry())


def _inline(node: Any, by_id: dict[str, dict]) -> Any:
    """Replace cross-file `$ref`s by their target, for the single-document fast path."""
    if isinstance(node, dict):
        if node.get("$ref") in by_id:
            target = {k: v for k, v in by_id[node["$ref"]].items() if k not in ("$id", "$schema")}
            return _inline(target, by_id)
        return {k: _inline(v, by_id) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, by_id) for v in node]
    return node


@lru_cache(maxsize=None)
def _fast(name: str):
    schemas = all_schemas()
    by_id = {s["$id"]: s for s in schemas.values()}
    schema = _inline(schemas[name], by_id)
    schema.pop("$id", None)
    # The keywords used here mean the same in draft-07, which fastjsonschema compiles.
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    return fastjsonschema.compile(schema)


_TYPE_NAMES = {"object": "object", "array": "list", "string": "string", "integer": "integer",
               "number": "number", "boolean": "boolean"}


def _translate(err, base: Path) -> FieldError:
    path = base.child(*err.absolute_path)
    kind, expected, value = err.validator, err.validator_value, err.instance
    if kind == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        wanted = " or ".join(_TYPE_NAMES.get(n, n) for n in names if n != "null")
        return invalid(path, value, f"must be of type {wanted}")
    if kind in ("minimum", "maximum") and expected in (-2147483648, 2147483647):
        return invalid(path, value, "must be a 32-bit integer")
    if kind == "minimum":
        return invalid(path, value, f"must be greater than or equal to {expected}")
    if kind == "maximum":
        return invalid(path, value, f"must be less than or equal to {expected}")
    if kind == "exclusiveMinimum":
        return invalid(path, value, f"must be greater than {expected}")
    if kind == "required":
        missing = next((p for p in expected if p not in value), expected[0])
        return required(path.child(missing))
    if kind == "additionalProperties":
        known = sorted(err.schema.get("properties", {}))
        extra = sorted(k for k in value if k not in known) if isinstance(value, dict) else []
        return unknown_field(path.child(extra[0]) if extra else path, known)
    if kind == "enum":
        return not_supported(path, value, [str(v) for v in expected])
    if kind == "maxItems":
        return too_many(path, len(value), expected)
    if kind == "minItems":
        return invalid(path, value, f"must have at least {expected} item{'s' if expected != 1 else ''}")
    if kind == "minProperties":
        return invalid(path, value, "must not be empty")
    if kind == "minLength":
        return invalid(path, value, "must not be empty")
    if kind == "uniqueItems":
        return duplicate(path, value)
    if kind == "pattern":
        return invalid(path, value, err.schema.get("description") or f"must match {expected}")
    if kind == "anyOf":
        options = [" and ".join(s.get("required", [])) for s in expected]
        return required(path, "must set " + " or ".join(o for o in options if o))
    return invalid(path, value, "does not match the schema")


def unknown_field(where: Path, known: list[str], limit: int | None = None) -> FieldError:
    """As kubectl's strict field validation says it: unknown field "spec.x.y" (`limit`: at most
    that many known fields named, then "…")."""
    shown = ", ".join(known[:limit]) + (", …" if limit is not None and len(known) > limit else "")
    return invalid(where, OMIT, f'unknown field "{where}"' + (f" (known fields: {shown})" if known
                                                              else " (this object has no fields)"))


# Validated once per process (the config file): fastjsonschema's generated code for the config
# schema weighs ~50 MiB per process, for no gain at start-up. The admission path keeps the fast one.
ONCE = frozenset({"config"})


def structural_errors(name: str, instance: Any, base: Path = ROOT,
                      limit: int = MAX_STRUCTURAL_ERRORS) -> list[FieldError]:
    """Shape errors of `instance` against schema `name`, as field errors under `base`."""
    if name not in ONCE:
        try:
            _fast(name)(instance)
            return []
        except fastjsonschema.JsonSchemaException:
            pass
    found = islice(validator(name).iter_errors(instance), limit)
    return sorted((_translate(e, base) for e in found), key=lambda e: str(e.field))
