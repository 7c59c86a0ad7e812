"""The core kinds' unknown fields, as kubectl's strict decoding names them
(`unknown field "spec.schedulingPolicyy"`), for the offline `validate`.

The published schemas of Workload, PodGroup and CompositePodGroup describe the
fields the rules read and leave the objects open: the server judges what
kube-apiserver already decoded, where an unknown field was dropped or refused,
and an open schema never refuses a field a newer API server admitted. Here the
same schemas are closed: every object that lists its properties allows only
those, with the fields the rules do not read added from the API (apiVersion,
kind, the whole ObjectMeta, metav1.Condition). The blocks' schemas are closed
already, so an unknown field inside a block is the shape check's to report."""
from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator

from webhook.field import FieldError, Path
from webhook.schemas import MAX_STRUCTURAL_ERRORS, _inline, all_schemas, unknown_field

KINDS = ("workload", "podgroup", "compositepodgroup")
ANY: dict = {}
# k8s.io/apimachinery pkg/apis/meta/v1 types.go: ObjectMeta, OwnerReference, ManagedFieldsEntry, Condition.
OBJECT_META = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
               "ownerReferences", "finalizers", "managedFields")
OWNER_REFERENCE = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
MANAGED_FIELDS = ("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource")
CONDITION = ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message")


def _with(node: dict, names: tuple[str, ...]) -> None:
    """`names` added to the node's properties (the published ones, typed, stay)."""
    node["properties"] = {**{n: ANY for n in names}, **node.get("properties", {})}


def _close(node: Any) -> None:
    """additionalProperties: false on every object schema that lists its properties."""
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            _close(value)
    elif isinstance(node, list):
        for value in node:
            _close(value)


@lru_cache(maxsize=None)
def strict_schema(kind: str) -> dict:
    schemas = all_schemas()
    schema = copy.deepcopy(_inline(schemas[kind], {s["$id"]: s for s in schemas.values()}))
    schema.pop("$id", None)
    _with(schema, ("apiVersion", "kind"))
    props = schema["properties"]
    meta = props["metadata"] = copy.deepcopy(props.get("metadata") or {"type": ["object", "null"]})
    _with(meta, OBJECT_META)
    meta["properties"]["ownerReferences"] = {"items": {"properties": {n: ANY for n in OWNER_REFERENCE}}}
    meta["properties"]["managedFields"] = {"items": {"properties": {n: ANY for n in MANAGED_FIELDS}}}
    conditions = ((props.get("status") or {}).get("properties") or {}).get("conditions")
    if conditions is not None:
        _with(conditions["items"], CONDITION)
    _close(schema)
    return schema


@lru_cache(maxsize=None)
def _fast(kind: str):
    schema = {**strict_schema(kind), "$schema": "http://json-schema.org/draft-07/schema#"}
    return fastjsonschema.compile(schema)


@lru_cache(maxsize=None)
def _validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(strict_schema(kind))


def unknown_fields(kind: str, obj: Any) -> list[FieldError]:
    """One error per field the kind's API does not have (`kind`: workload, podgroup, compositepodgroup)."""
    try:
        _fast(kind)(obj)
        return []
    except fastjsonschema.JsonSchemaException:
        pass
    out: list[FieldError] = []
    for err in _validator(kind).iter_errors(obj):
        if err.validator != "additionalProperties" or not isinstance(err.instance, dict):
            continue
        known = sorted(err.schema.get("properties", {}))
        base = Path(*err.absolute_path)
        out += [unknown_field(base.child(k), known) for k in sorted(err.instance) if k not in known]
        if len(out) >= MAX_STRUCTURAL_ERRORS:
            break
    return sorted(out[:MAX_STRUCTURAL_ERRORS], key=lambda e: str(e.field))
