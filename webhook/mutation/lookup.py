"""The PodGroup a Pod joins, looked up once (POD-5): what the view answered, as a
value (found, missing, being deleted, not askable, malformed), apart from the words
that say it. Whoever decides by the answer reads `Found.outcome`, never a message:
the bridge says a missing mirror its own way (BRG-2) by the outcome alone."""
from __future__ import annotations

import enum
from typing import NamedTuple

import orjson

from webhook.view import ClusterUnavailable, ClusterView
from webhook.field import FieldError, FieldWarning, Path, by_rule, forbidden, invalid, warning
from webhook.schemas import structural_errors

GROUP_NAME = Path("spec", "schedulingGroup", "podGroupName")


class Outcome(enum.Enum):
    FOUND = "found"
    MISSING = "missing"             # the view answered: no such PodGroup
    NO_VIEW = "no view"             # no cluster at all: nothing was asked (missing, as far as is known)
    UNAVAILABLE = "unavailable"     # the view could not answer (ClusterUnavailable)
    MALFORMED = "malformed"         # a PodGroup of the wrong shape (a stale or hostile cache)
    DELETING = "deleting"           # a PodGroup with a deletionTimestamp

    @property
    def missing(self) -> bool:
        """No PodGroup of that name is known."""
        return self is MISSING or self is NO_VIEW


# The members as module constants: reading a member through its Enum class is several times
# slower than a module attribute (Python 3.11's EnumType), and the join reads them per Pod.
FOUND, MISSING, NO_VIEW, UNAVAILABLE, MALFORMED, DELETING = Outcome


class Found(NamedTuple):
    outcome: Outcome
    podgroup: dict | None = None     # only with FOUND
    cause: str = ""                  # UNAVAILABLE: why the view could not answer


def find(view: ClusterView, namespace: str, name: str) -> Found:
    """One lookup of PodGroup `name`. NeedsNetwork (the event loop may not wait) is not caught."""
    try:
        podgroup = view.podgroup(namespace, name)
    except ClusterUnavailable as exc:
        return Found(UNAVAILABLE, cause=str(exc))
    if podgroup is None:
        return Found(NO_VIEW if view.disabled else MISSING)
    if not isinstance(podgroup, dict) or not well_formed(podgroup):
        return Found(MALFORMED)
    if (podgroup.get("metadata") or {}).get("deletionTimestamp"):
        return Found(DELETING)
    return Found(FOUND, podgroup)


# PodGroups whose shape was judged lately, by their compact JSON bytes: every Pod of a gang asks
# for the same group, and the schema check was most of the lookup (~8 of ~10 µs a join).
_SHAPES: dict[bytes, bool] = {}
_SHAPES_KEPT = 1024
#: Longer keys are not kept: the memo stays within 4 MiB a worker (a PodGroup is ~0.5 KiB compact).
_SHAPE_KEY_MAX = 4096
# A key only where the bytes say the value exactly: no datetimes, dataclasses or subclasses
# (orjson would write them as the plain values they are not: TypeError instead).
_EXACT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


def well_formed(podgroup: dict) -> bool:
    """`structural_errors("podgroup", ...)` finds nothing, judged once per distinct value. The
    view's objects are JSON values (decoded from kube-apiserver's JSON, the cache's packed
    bytes, manifest files): for those, equal compact bytes are an equal value, which the schema
    judges the same. Not remembered: values over 4 KiB compact, bytes with a `null` in them (orjson writes NaN and
    infinities as null too), and what orjson does not write (integers beyond 64 bits)."""
    try:
        key = orjson.dumps(podgroup, option=_EXACT)
    except TypeError:
        return not structural_errors("podgroup", podgroup, limit=1)
    ok = _SHAPES.get(key)
    if ok is None:
        ok = not structural_errors("podgroup", podgroup, limit=1)
        if len(key) <= _SHAPE_KEY_MAX and b"null" not in key:
            if len(_SHAPES) >= _SHAPES_KEPT:
                _SHAPES.clear()
            _SHAPES[key] = ok
    return ok


Said = tuple[tuple[FieldError, ...], tuple[FieldWarning, ...]]


def said(found: Found, name: str, namespace: str, deny: bool) -> Said:
    """The in-tree words for an outcome (POD-5): errors with pods.onMissingPodGroup: deny
    (`deny`) or for a group being deleted, else warnings that the claims were not injected."""
    o = found.outcome
    if o is FOUND:
        return (), ()
    if o is UNAVAILABLE:
        if deny:
            return tuple(by_rule([forbidden(GROUP_NAME, f"PodGroup {name!r} could not be looked up ({found.cause}) "
                                                        "and pods.onMissingPodGroup is deny")], "POD-5")), ()
        return (), (warning(GROUP_NAME, f"PodGroup {name!r} not looked up ({found.cause}); claims not injected"),)
    if o.missing:
        if deny:
            return tuple(by_rule([invalid(GROUP_NAME, name, f"PodGroup {name!r} does not exist in namespace "
                                                            f"{namespace!r} (pods.onMissingPodGroup: deny)")],
                                 "POD-5")), ()
        if o is NO_VIEW:
            return (), (warning(GROUP_NAME, f"no cluster view; claims of PodGroup {name!r} not injected"),)
        return (), (warning(GROUP_NAME, f"PodGroup {name!r} not found yet; its claims were not injected"),)
    if o is MALFORMED:
        return (), (warning(GROUP_NAME, f"PodGroup {name!r} is malformed; its claims were not injected"),)
    return tuple(by_rule([forbidden(GROUP_NAME, f"cannot create Pod referencing PodGroup {name!r} "
                                                "because it is being deleted")], "POD-5")), ()
