"""Who set what on an object: its managedFields, read as a person would say it.

managedFields names the field manager of every write (the user agent's first
word unless a client names one: `kube-controller-manager`, `kube-scheduler`,
`ResourceClaimController`, `kubectl-create`, ...). A mutating admission webhook
never appears there: what it adds is recorded under the manager of the request
it mutated. So additions made at admission are found by comparing an object with
what its creator asked for (a Pod with its Job's pod template; see
`admission_additions`). Pure functions of dicts."""
from __future__ import annotations

from typing import Any

#: Which controller of kube-controller-manager creates an object, told by its owner.
CONTROLLER_BY_OWNER = {("Job", "Workload"): "job-controller", ("Job", "PodGroup"): "job-controller",
                       ("Job", "Pod"): "job-controller",
                       ("PodGroup", "ResourceClaim"): "resourceclaim-controller",
                       ("Pod", "ResourceClaim"): "resourceclaim-controller"}
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def _fields(fields_v1: Any, prefix: str = "", depth: int = 2) -> list[str]:
    """`{"f:spec": {"f:resourceClaims": {}}}` -> ["spec.resourceClaims"], two levels deep."""
    if not isinstance(fields_v1, dict):
        return []
    out: list[str] = []
    for key, sub in fields_v1.items():
        if not isinstance(key, str) or not key.startswith("f:"):
            continue
        path = f"{prefix}.{key[2:]}" if prefix else key[2:]
        children = _fields(sub, path, depth - 1) if depth > 1 else []
        out.extend(children or [path])
    return out


def entries(obj: dict) -> list[dict]:
    """One entry per managedFields item: manager, operation, subresource, the fields
    it owns (two levels: `spec.resourceClaims`, `status.allocation`) and when."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    out = []
    for m in (meta or {}).get("managedFields") or []:
        if not isinstance(m, dict):
            continue
        fields = [f for f in _fields(m.get("fieldsV1")) if not f.startswith("metadata.")] or \
            [f for f in _fields(m.get("fieldsV1")) if f.startswith("metadata.")]
        out.append({"manager": m.get("manager") or "unknown", "operation": m.get("operation"),
                    "subresource": m.get("subresource") or None, "fields": fields, "time": m.get("time")})
    return out


def controller_owner(obj: dict) -> dict | None:
    for ref in ((obj.get("metadata") or {}).get("ownerReferences") or []):
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def created_by(obj: dict) -> str:
    """The creator: the controller its owner reference tells (kube-controller-manager's
    job-controller, resourceclaim-controller), else the manager of its first write."""
    kind = obj.get("kind") or ""
    owner = controller_owner(obj)
    found = entries(obj)
    main = next((e for e in found if not e["subresource"]), found[0] if found else None)
    manager = main["manager"] if main else "unknown"
    if owner is not None:
        controller = CONTROLLER_BY_OWNER.get((owner.get("kind"), kind))
        if controller:
            return f"{controller} ({manager})" if manager != "unknown" else controller
    return manager


def set_by(obj: dict) -> dict:
    """{"created": who, "writes": [entries]}: what the JSON output carries per object."""
    return {"created": created_by(obj), "writes": entries(obj)}


def summary(obj: dict) -> list[str]:
    """Short lines for the text tree: `kube-scheduler: status.allocation, status.reservedFor`."""
    lines = []
    for e in entries(obj):
        where = f" ({e['subresource']})" if e["subresource"] else ""
        lines.append(f"{e['manager']}{where}: {', '.join(e['fields']) or '-'}")
    return lines


def _claims_of(spec: Any) -> dict[str, dict]:
    out = {}
    for c in (spec or {}).get("resourceClaims") or [] if isinstance(spec, dict) else []:
        if isinstance(c, dict) and isinstance(c.get("name"), str):
            out[c["name"]] = c
    return out


def admission_additions(pod: dict, template_spec: dict | None) -> list[str]:
    """What the Pod has that its creator's pod template did not ask for: set at
    admission (a mutating webhook), since a controller copies its template.
    Without a template (a Pod created by hand) nothing can be told: []."""
    if not isinstance(template_spec, dict):
        return []
    spec = pod.get("spec") or {}
    added = []
    mine, asked = _claims_of(spec), _claims_of(template_spec)
    for name in mine:
        if name not in asked:
            added.append(f"spec.resourceClaims[{name}]")
    for i, c in enumerate(spec.get("containers") or []):
        have = {x.get("name") for x in ((c.get("resources") or {}).get("claims") or []) if isinstance(x, dict)}
        tmpl = (template_spec.get("containers") or [])
        tc = next((t for t in tmpl if isinstance(t, dict) and t.get("name") == c.get("name")), {})
        had = {x.get("name") for x in ((tc.get("resources") or {}).get("claims") or []) if isinstance(x, dict)}
        for name in sorted(n for n in have - had if n):
            added.append(f"spec.containers[{c.get('name')}].resources.claims[{name}]")
    return added
