"""admission.k8s.io/v1 AdmissionReview: bytes -> Request (ADM-1, ADM-6) and
Verdict -> response (ADM-2, ADM-3, ADM-5). Every malformed input becomes a
BadReview with a one-line reason; nothing here raises anything else."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import orjson

from webhook import enforcement
from webhook.engine import Request
from webhook.verdict import Verdict

API_VERSION = "admission.k8s.io/v1"
MAX_DEPTH = 100            # Kubernetes objects nest ~20 deep; more is hostile
MAX_CAUSES = 100           # a denial lists at most this many field errors
MAX_WARNINGS = 20
MAX_WARNING_CHARS = 120
MAX_CAUSE_CHARS = 1024     # field paths are built from the object's own keys: bounded in every answer
# kube-apiserver records it as `<webhook name>/violations` in the audit event.
AUDIT_KEY = "violations"


class BadReview(Exception):
    """The request is not a usable AdmissionReview: HTTP `status` with a one-line reason."""

    def __init__(self, reason: str, status: int = 400):
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass(slots=True)       # not frozen, as engine.Request: made once per request, never changed
class Review:
    uid: str
    request: Request
    name: str
    sub_resource: str
    user: str = ""          # userInfo.username: who asked (logs and Events; never judged)


def _depth_ok(value: Any, limit: int, depth: int = 1) -> bool:
    """Nesting at most `limit` deep. Recursion stops at `limit`, far below
    Python's own limit (and is 3-4x faster than an explicit stack here)."""
    if depth > limit:
        return False
    if type(value) is dict:
        children = value.values()
    elif type(value) is list:
        children = value
    else:
        return True
    for child in children:
        if (type(child) is dict or type(child) is list) and not _depth_ok(child, limit, depth + 1):
            return False
    return True


def _string(container: dict, key: str, where: str, required: bool = True) -> str:
    value = container.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise BadReview(f"{where}.{key} must be a non-empty string")
    return value


def parse(body: bytes, content_type: str | None) -> Review:
    mime = (content_type or "").split(";")[0].strip().lower()
    if mime != "application/json":
        raise BadReview(f"Content-Type must be application/json, not {mime[:60] or 'missing'!r}")
    try:
        doc = _loads(body)
    except RecursionError:
        raise BadReview(f"request body is nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadReview(f"request body is not valid JSON: {str(exc).splitlines()[0][:120]}") from None
    if not isinstance(doc, dict):
        raise BadReview("request body must be a JSON object (an AdmissionReview)")
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != "AdmissionReview":
        raise BadReview(f"expected apiVersion {API_VERSION} kind AdmissionReview, got "
                        f"{str(doc.get('apiVersion'))[:60]!r} {str(doc.get('kind'))[:60]!r}")
    # Nesting cannot be deeper than the number of `{` and `[` (a C-speed count): most bodies skip the walk.
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH and not _depth_ok(doc, MAX_DEPTH):
        raise BadReview(f"request body is nested deeper than {MAX_DEPTH} levels")
    req = doc.get("request")
    if not isinstance(req, dict):
        raise BadReview("AdmissionReview.request must be an object")
    uid = _string(req, "uid", "request")
    kind = req.get("kind")
    if not isinstance(kind, dict):
        raise BadReview("request.kind must be an object {group, version, kind}")
    group = _string(kind, "group", "request.kind", required=False)
    version = _string(kind, "version", "request.kind")
    kind_name = _string(kind, "kind", "request.kind")
    if len(group) > 253 or len(version) > 63 or len(kind_name) > 63:
        raise BadReview("request.kind has a group, version or kind longer than Kubernetes allows")
    operation = _string(req, "operation", "request")
    if operation not in ("CREATE", "UPDATE", "DELETE", "CONNECT"):
        raise BadReview(f"request.operation {operation[:40]!r} is not CREATE, UPDATE, DELETE or CONNECT")
    dry_run = req.get("dryRun", False)
    if not isinstance(dry_run, (bool, type(None))):
        raise BadReview("request.dryRun must be a boolean")
    request = Request(operation=operation, group=group, version=version, kind=kind_name,
                      object=req.get("object"), old_object=req.get("oldObject"),
                      namespace=_string(req, "namespace", "request", required=False) or None,
                      dry_run=bool(dry_run))
    info = req.get("userInfo")
    user = info.get("username") if type(info) is dict else None
    return Review(uid=uid, request=request, name=_string(req, "name", "request", required=False),
                  sub_resource=_string(req, "subResource", "request", required=False),
                  user=user if type(user) is str else "")


def _loads(body: bytes) -> Any:
    """orjson (several times faster on large objects); the standard library for
    what it refuses but JSON allows (integers beyond 64 bits), so no legitimate
    object is refused."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


def encode(answer: Any) -> bytes:
    """orjson; the standard library (ASCII escapes) for what orjson cannot encode:
    a lone surrogate (`"\\udfff"` in the request, which JSON allows) copied into a
    message or a patch value. The escape stays an escape, so nothing is lost."""
    try:
        return orjson.dumps(answer)
    except TypeError:
        return json.dumps(answer, separators=(",", ":")).encode()


def cut(text: str, limit: int = MAX_CAUSE_CHARS) -> str:
    """`text` in at most `limit` characters (an ellipsis marks the cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _warning(text: str) -> str:
    return cut(" ".join(text.split()), MAX_WARNING_CHARS)


def respond(uid: str, verdict: Verdict, review: Review | None = None) -> dict:
    """The AdmissionReview answer. With the review, a denial's details name the
    object, so kubectl prints `The TrainJob "x" is invalid: ...` as for API errors."""
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        errors = verdict.errors
        shown = errors[:MAX_CAUSES]
        message = "; ".join(cut(str(e)) for e in shown)
        if len(errors) > len(shown):
            message += f"; and {len(errors) - len(shown)} more errors"
        details: dict[str, Any] = {}
        if review is not None:
            details = {"name": review.name or None, "group": review.request.group or None, "kind": review.request.kind}
        details["causes"] = [{"field": cut(str(e.field)), "reason": e.reason, "message": cut(e.body())} for e in shown]
        response["status"] = {"status": "Failure", "code": 422, "reason": "Invalid", "message": message,
                              "details": {k: v for k, v in details.items() if v is not None}}
    elif verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(encode(verdict.patch)).decode()
    # Violations enforced as `warn` keep their whole text (rule id last); soft findings are short.
    warnings = [cut(str(e)) for e in verdict.warned] + [_warning(w) for w in verdict.warnings]
    if warnings:
        response["warnings"] = warnings[:MAX_WARNINGS]
    if verdict.audits:
        response["auditAnnotations"] = {AUDIT_KEY: enforcement.annotation(verdict.audits)}
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def internal_error(uid: str) -> dict:
    """The engine failed on this object: fail closed with a clear reason, no trace."""
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": {
        "uid": uid, "allowed": False, "status": {
            "status": "Failure", "code": 500, "reason": "InternalError",
            "message": f"workload-webhook could not judge this object (request {uid}); see the webhook's log"}}}
