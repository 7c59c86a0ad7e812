"""The names the in-tree Job controller gives the objects it builds (Kubernetes
1.37 pkg/controller/job: computeWorkloadName, computePodGroupName and the
template name `<job>-pgt-0`), so an operator following the same scheme gets the
same names: deterministic, unique, and never longer than a DNS subdomain (253).

    workload_name("trainer", uid)          -> "trainer-<hash of the uid>"
    pod_group_name(workload, template)     -> "<workload>-<template>-<hash of both>"

The hash is FNV-1a (32 bits) of what Go hashes, written in decimal and each digit
mapped onto the API's safe alphabet (apimachinery's rand.SafeEncodeString)."""
from __future__ import annotations

DNS1123_SUBDOMAIN_MAX = 253
_SAFE = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193


def fnv32a(data: bytes) -> int:
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def safe_encode(s: str) -> str:
    """Each character onto the safe alphabet by its code point (Go: rand.SafeEncodeString)."""
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in s)


def _hash(data: bytes) -> str:
    return safe_encode(str(fnv32a(data)))


def workload_name(owner_name: str, owner_uid: str) -> str:
    """`<owner name>-<hash>`, the owner's name cut to fit 253 characters. The hash is of the
    owner's UID as Go's DeepHashObject prints a types.UID: `(types.UID)<uid>`."""
    suffix = _hash(f"(types.UID){owner_uid}".encode())
    prefix = _cut(owner_name, DNS1123_SUBDOMAIN_MAX - len(suffix) - 1)
    return f"{prefix}-{suffix}"


def pod_group_name(workload: str, template: str) -> str:
    """`<workload>-<template>-<hash>`: when both do not fit, each part keeps up to half the
    room, a short part lending the rest to the other (the workload gets the odd character)."""
    suffix = _hash(workload.encode() + template.encode())
    room = DNS1123_SUBDOMAIN_MAX - len(suffix) - 2
    wl, tpl = workload.encode(), template.encode()
    if len(wl) + len(tpl) > room:
        half = room // 2
        if len(wl) <= half:
            tpl = tpl[:room - len(wl)]
        elif len(tpl) <= half:
            wl = wl[:room - len(tpl)]
        else:
            wl, tpl = wl[:room - half], tpl[:half]
    return f"{_text(wl)}-{_text(tpl)}-{suffix}"


def template_name(owner_name: str, index: int = 0) -> str:
    """The Job controller's PodGroupTemplate name: `<job name>-pgt-<index>`."""
    return f"{owner_name}-pgt-{index}"


def _cut(s: str, limit: int) -> str:
    """The first `limit` bytes (Go slices strings by byte)."""
    b = s.encode()
    return s if len(b) <= limit else _text(b[:limit])


def _text(b: bytes) -> str:
    # Names are ASCII; a multi-byte character cut in two is kept as Go keeps it (the bytes).
    return b.decode("utf-8", errors="surrogateescape")
