"""A call to the API server that failed, said in one line: which server, and
why (refused, timed out, TLS, 401, 403 with the server's own message), never
urllib3's nested repr or a traceback. What the CLI prints before exit 2."""
from __future__ import annotations

import json
import ssl

from webhook.view import ClusterUnavailable

MAX_REASON = 300


def errors() -> tuple[type[BaseException], ...]:
    """The exceptions a cluster call raises (client errors, transport errors, our own)."""
    import urllib3
    from kubernetes.client.rest import ApiException
    return ApiException, urllib3.exceptions.HTTPError, ClusterUnavailable, OSError


def _status_message(body) -> str:
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        data = json.loads(body or "")
    except (TypeError, ValueError):
        return ""
    return str(data.get("message") or "") if isinstance(data, dict) else ""


def _tls(exc: BaseException) -> str:
    inner = next((a for a in getattr(exc, "args", ()) if isinstance(a, ssl.SSLError)), exc)
    if isinstance(inner, ssl.SSLCertVerificationError) and inner.verify_message:
        return f"TLS: certificate verify failed: {inner.verify_message}"
    text = getattr(inner, "reason", None) or str(inner)
    return f"TLS: {text}"


def reason(exc: BaseException) -> str:
    """Why the call failed, in a few words."""
    import urllib3
    from kubernetes.client.rest import ApiException
    errs = urllib3.exceptions
    if isinstance(exc, errs.MaxRetryError) and exc.reason is not None:
        return reason(exc.reason)
    if isinstance(exc, ApiException):
        if not exc.status:                # the client's wrapping of a TLS failure
            return "TLS: " + (str(exc.reason or "").splitlines() or [""])[-1]
        message = _status_message(exc.body)
        if message.lower() == str(exc.reason or "").lower():
            message = ""                  # kube-apiserver's 401 says "Unauthorized" twice
        if exc.status == 401:
            message = message or "the credentials were not accepted"
        return f"{exc.status} {exc.reason or ''}".rstrip() + (f": {message}" if message else "")
    if isinstance(exc, errs.SSLError) or isinstance(exc, ssl.SSLError):
        return _tls(exc)
    if isinstance(exc, errs.NameResolutionError):
        return "the host name does not resolve"
    if isinstance(exc, errs.NewConnectionError):     # a subclass of ConnectTimeoutError in urllib3 2
        text = str(exc).rpartition("Failed to establish a new connection: ")[2]
        return text.split("] ", 1)[-1].lower() if text.startswith("[Errno") else text
    if isinstance(exc, errs.ConnectTimeoutError):
        return "connecting timed out"
    if isinstance(exc, errs.ReadTimeoutError):
        return "no answer within the timeout"
    if isinstance(exc, errs.ProtocolError):
        return "the connection broke: " + (str(exc.args[-1]) if exc.args else "")
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def line(server: str | None, exc: BaseException) -> str:
    """`the API server URL: reason`, one line, bounded."""
    why = " ".join(reason(exc).split())[:MAX_REASON]
    if isinstance(exc, ClusterUnavailable) and not server:
        return why
    return f"the API server {server or '(unknown)'}: {why}"


def server_of(api) -> str | None:
    """The URL an ApiClient talks to."""
    return getattr(getattr(api, "configuration", None), "host", None)
