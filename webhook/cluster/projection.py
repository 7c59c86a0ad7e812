"""What admission reads of a cached PodGroup, and nothing else: the watch cache
keeps this projection of each object, packed as compact JSON bytes.

Every field the rules read of a PodGroup from the ClusterView (the Pod's join,
webhook/mutation/pods.py):

- the whole object's shape (`structural_errors("podgroup", ...)`: a malformed
  group's claims are not injected);
- `metadata.deletionTimestamp` (POD-5: no Pod joins a group being deleted);
- `spec.resourceClaims[*]` `name`, `resourceClaimName`,
  `resourceClaimTemplateName` (POD-4: the claims copied into the Pod);
- `spec.workloadRef.workloadName` (POD-8: the workload label);
- `spec.priority`, `spec.priorityClassName` (named in GANG-1's message),
  `spec.preemptionPolicy` and `spec.parentCompositePodGroupName` (GANG-1,
  GANG-2: the Pod's priority and preemption policy against the root group's,
  the hierarchy walked up from the parent; webhook/rules/gang_members.py):
  55 bytes more per PodGroup packed (priority 0 and the default policy, as the
  API server stores them).

Kept besides: `metadata.name` and `namespace` (the object's key) and
`metadata.resourceVersion` (where the cache is). Dropped: managed fields,
labels, annotations, owner references, finalizers, the policy, constraints,
disruption mode, status. The shape check runs on the whole object
here, once per version: an object the rules would call malformed is kept
whole, so they still do. tests/unit/test_projection.py proves the rules give
the same verdict and patch on the projection as on the whole object.

Workloads are not cached: PG-2 reads one Workload per PodGroup create, with a
GET (webhook/cluster/cache.py says why)."""
from __future__ import annotations

import json
from typing import Any, Callable

import orjson

from webhook.blocks.claims import REFS
from webhook.schemas import structural_errors

CLAIM_KEYS = ("name", *REFS)
GANG_KEYS = ("priority", "priorityClassName", "preemptionPolicy", "parentCompositePodGroupName")
METADATA_KEYS = ("name", "namespace", "resourceVersion", "deletionTimestamp")


def whole(obj: dict) -> dict:
    return obj


def podgroup(obj: Any) -> Any:
    """The PodGroup as far as admission reads it (the object itself if its shape is wrong)."""
    if not isinstance(obj, dict) or structural_errors("podgroup", obj, limit=1):
        return obj
    meta = obj.get("metadata") or {}
    out: dict[str, Any] = {"metadata": {k: meta[k] for k in METADATA_KEYS if meta.get(k) is not None}}
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return out
    kept: dict[str, Any] = {}
    ref = spec.get("workloadRef")
    if isinstance(ref, dict) and ref.get("workloadName") is not None:
        kept["workloadRef"] = {"workloadName": ref["workloadName"]}
    for key in GANG_KEYS:
        if spec.get(key) is not None:
            kept[key] = spec[key]
    claims = spec.get("resourceClaims")
    if claims:
        kept["resourceClaims"] = [{k: c[k] for k in CLAIM_KEYS if k in c} for c in claims]
    out["spec"] = kept
    return out


FOR_PLURAL: dict[str, Callable[[Any], Any]] = {"podgroups": podgroup}


def pack(obj: Any) -> bytes:
    """Compact JSON: one bytes object per cached object (not tracked by the garbage
    collector, a quarter of the size of the dicts it decodes to). Copied out of
    orjson's answer, which keeps a 4 KiB buffer behind even a 200-byte result."""
    try:
        return memoryview(orjson.dumps(obj)).tobytes()
    except TypeError:              # integers beyond 64 bits: only a malformed object, kept whole, has them
        return json.dumps(obj, separators=(",", ":")).encode()


def unpack(data: bytes) -> Any:
    """A fresh object each time: a rule that changes what it was given cannot change the cache."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
