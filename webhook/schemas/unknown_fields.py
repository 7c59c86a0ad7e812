"""Unknown fields, as kubectl's strict field validation names them
(`unknown field "spec.schedulingPolicyy"`), for the offline `validate`: the one
module that finds them, for the core kinds and for the targets' CRDs; the command
(webhook/commands/validate.py) adds them to the verdict, once (`added`). The server
and `audit` never look: they judge what kube-apiserver decoded, where an unknown
field was already dropped or refused (and a newer API server may know more fields).

- **The core kinds** (Workload, PodGroup, CompositePodGroup): their published
  schemas describe the fields the rules read and leave the objects open. Here the
  same schemas are closed: every object that lists its properties allows only
  those, with the fields the rules do not read added from the API (apiVersion,
  kind, the whole ObjectMeta, metav1.Condition). The blocks' schemas are closed
  already, so an unknown field inside a block is the shape check's to report.
- **A target** whose CRD was read (`validate --crd`): the API server prunes every
  field a structural schema does not declare, and kubectl's strict field
  validation (the default of `kubectl apply`) refuses the object instead. Offline,
  only the CRD knows the fields beside the building blocks. The walk is the pruning
  algorithm of apiextensions-apiserver (pkg/apiserver/schema/pruning/algorithm.go):
  `properties`, then `additionalProperties`, else unknown;
  `x-kubernetes-preserve-unknown-fields` keeps what is undeclared below it (declared
  fields are still walked); `x-kubernetes-embedded-resource` and the root allow
  apiVersion, kind and metadata, and metadata has ObjectMeta's fields."""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable

import fastjsonschema
from jsonschema import Draft202012Validator

from webhook import kinds
from webhook.field import ROOT, FieldError, Path
from webhook.schemas import MAX_STRUCTURAL_ERRORS, _inline, all_schemas, unknown_field
from webhook.verdict import Verdict

RESOURCE = ("apiVersion", "kind", "metadata")
MAX_ERRORS = 50           # per CRD object: a wholly wrong object is not a thousand lines


def unknown_fields(obj: Any, crds: "CrdSchemas | None" = None) -> list[FieldError] | None:
    """Every field of `obj` its API does not have: a core kind's, or a CRD's read into `crds`;
    None when neither knows the object's kind. An object nested too deeply has none here (the
    rules' own answer says so)."""
    if not isinstance(obj, dict):
        return None
    core = _core_kind(obj)
    schema = None if core is not None or crds is None else crds.for_object(obj)
    if core is None and schema is None:
        return None
    try:
        return core_unknown_fields(core.kind.lower(), obj) if core is not None else crd_unknown_fields(obj, schema)
    except RecursionError:
        return []


def added(verdict: Verdict, obj: Any, crds: "CrdSchemas | None" = None) -> Verdict:
    """The verdict (enforced already) plus the object's unknown fields, each once: a field a
    rule named already, denied or relaxed, is not named again (a block's own schema names its
    unknown fields); a CRD's object counts as checked (its schema judged it)."""
    found = unknown_fields(obj, crds)
    if found is None:
        return verdict
    named = {str(e.field) for e in [*verdict.errors, *verdict.warned, *verdict.audits]}   # relaxed ones too
    extra = [e for e in found if str(e.field) not in named]
    checked = verdict.checked or _core_kind(obj) is None
    if not extra and checked == verdict.checked:
        return verdict
    return dataclasses.replace(verdict, errors=[*verdict.errors, *extra], checked=checked)


def _core_kind(obj: dict):
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    return kinds.scheduling_kind(group, version, obj.get("kind"))


# ---- the core kinds: their published schemas, closed

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


def core_unknown_fields(kind: str, obj: Any) -> list[FieldError]:
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


# ---- a target: its CRD's schema, walked as the API server prunes

CRD_GROUP = "apiextensions.k8s.io"


@dataclass
class CrdSchemas:
    """openAPIV3Schema of each served (group, kind, version) of the CRDs read."""
    by_version: dict[tuple[str, str, str], dict] = field(default_factory=dict)

    def add_crd(self, crd: Any) -> str | None:
        """Takes a CustomResourceDefinition; returns why it was not taken, or None."""
        if not (isinstance(crd, dict) and crd.get("kind") == "CustomResourceDefinition"
                and str(crd.get("apiVersion", "")).startswith(CRD_GROUP + "/")):
            return "not an apiextensions.k8s.io CustomResourceDefinition"
        spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
        names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
        group, kind = spec.get("group"), names.get("kind")
        if not isinstance(group, str) or not isinstance(kind, str):
            return "a CustomResourceDefinition without spec.group and spec.names.kind"
        taken = 0
        for version in spec.get("versions") or []:
            schema = ((version.get("schema") or {}).get("openAPIV3Schema") if isinstance(version, dict) else None)
            if isinstance(schema, dict) and isinstance(version.get("name"), str):
                self.by_version[(group, kind, version["name"])] = schema
                taken += 1
        return None if taken else f"{kind}.{group}: no version has an openAPIV3Schema"

    def for_object(self, obj: Any) -> dict | None:
        if not isinstance(obj, dict):
            return None
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        return self.by_version.get((group, str(obj.get("kind", "")), version))


def crd_unknown_fields(obj: dict, schema: dict) -> list[FieldError]:
    """Every field of `obj` its schema does not declare, as kubectl's strict validation names them."""
    out: list[FieldError] = []
    _walk(obj, schema, ROOT, out, resource=True)
    return out[:MAX_ERRORS]


def _unknown(path: Path, known: Iterable[str]) -> FieldError:
    return unknown_field(path, sorted(known), limit=20)


def _walk(value: Any, schema: Any, path: Path, out: list[FieldError], resource: bool = False) -> None:
    if len(out) >= MAX_ERRORS:
        return
    if schema is True:          # additionalProperties: true: anything goes below
        return
    s = schema if isinstance(schema, dict) else None
    preserve = s is not None and s.get("x-kubernetes-preserve-unknown-fields") is True
    if isinstance(value, list):
        for i, item in enumerate(value):
            _walk(item, s.get("items") if s is not None else None, path.index(i), out)
        return
    if not isinstance(value, dict):
        return
    embedded = resource or (s is not None and s.get("x-kubernetes-embedded-resource") is True)
    props = s.get("properties") if s is not None and isinstance(s.get("properties"), dict) else {}
    extra = s.get("additionalProperties") if s is not None else None
    for key, item in value.items():
        at = path.child(key)
        if embedded and key in RESOURCE:        # the schema's own metadata is `type: object`: ObjectMeta decides
            if key == "metadata" and isinstance(item, dict):
                out += [_unknown(at.child(k), OBJECT_META) for k in item if k not in OBJECT_META]
            continue
        if key in props:
            _walk(item, props[key], at, out)
        elif extra is not None and extra is not False:
            _walk(item, extra, at, out)
        elif not preserve:
            out.append(_unknown(at, [*props, *(RESOURCE if embedded else ())]))
