"""Unknown fields of an object against its CRD's schema (`validate --crd`).

The API server prunes every field a structural schema does not declare, and
kubectl's strict field validation (the default of `kubectl apply`) refuses
the object instead: `unknown field "spec.scheduling.disruptonMode"`. Offline,
only the CRD knows the fields beside the building blocks, so `validate` reads
it. The walk is the pruning algorithm of apiextensions-apiserver
(pkg/apiserver/schema/pruning/algorithm.go): `properties`, then
`additionalProperties`, else unknown; `x-kubernetes-preserve-unknown-fields`
keeps what is undeclared below it (declared fields are still walked);
`x-kubernetes-embedded-resource` and the root allow apiVersion, kind and
metadata, and metadata has ObjectMeta's fields."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from webhook.field import ROOT, FieldError, Path
from webhook.schemas import unknown_field
from webhook.schemas.strict import OBJECT_META

CRD_GROUP = "apiextensions.k8s.io"
RESOURCE = ("apiVersion", "kind", "metadata")
MAX_ERRORS = 50           # per object: a wholly wrong object is not a thousand lines


@dataclass
class Schemas:
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


def unknown_fields(obj: dict, schema: dict) -> list[FieldError]:
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
