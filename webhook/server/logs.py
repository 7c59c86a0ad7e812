"""Structured logs: one JSON object per line (or plain text), with the request
uid, kind, namespace/name, the requesting user, verdict, rule ids and latency;
never object bodies. gunicorn's own lines (its master and workers: "Booting
worker", signals, timeouts) go through the same formatter (`gunicorn_logconfig`)."""
from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from webhook.admission.review import cut

_FIELDS = ("uid", "endpoint", "kind", "operation", "namespace", "object", "user", "verdict", "rules", "latency_ms",
           "dry_run", "status", "reason", "errors", "warnings", "violations")


MAX_FIELD_CHARS = 256      # any string taken from a request, in a log line
MAX_ERRORS_LOGGED = 5
MAX_LINE_CHARS = 4000      # a whole line: each field is bounded, their number too, and the sum


def bounded(value: Any, limit: int = MAX_FIELD_CHARS) -> Any:
    """A string from a request, cut to `limit` characters: a 200,000-character
    name must not make a 200 KB log line."""
    return cut(value, limit) if isinstance(value, str) else value


def request_fields(parsed, endpoint: str, outcome: str, elapsed: float, verdict) -> dict:
    """The `extra` of an admission log line, every value bounded; a denial's `rules`
    are the ids of what denied it (docs/rules.md)."""
    req = parsed.request
    kind = f"{req.group + '/' if req.group else ''}{req.version}/{req.kind}"
    errors = rules = None
    if verdict is not None and verdict.errors:
        errors = [bounded(str(e)) for e in verdict.errors[:MAX_ERRORS_LOGGED]]
        rules = rule_ids(verdict.errors)
    return {"uid": bounded(parsed.uid), "endpoint": endpoint, "kind": bounded(kind), "operation": req.operation,
            "namespace": bounded(req.namespace or ""), "object": bounded(parsed.name), "user": bounded(parsed.user),
            "verdict": outcome, "rules": rules, "latency_ms": round(elapsed * 1000, 3), "dry_run": req.dry_run,
            "errors": errors}


def rule_ids(errors) -> list[str]:
    """The distinct rule ids of `errors`, sorted (`none` for an error that names no rule)."""
    return sorted({e.id or "none" for e in errors})


def enforced(log: logging.Logger, parsed, endpoint: str, verdict) -> None:
    """One line per action for violations enforced as warn or audit (the request itself
    may still be denied by another violation), with the user, the object and the rule ids."""
    for action, errors in (("warn", verdict.warned), ("audit", verdict.audits)):
        if errors:
            log.info("%s %s with %d %s violation(s)", endpoint, "admitted" if verdict.allowed else "denied",
                     len(errors), action,
                     extra={**request_fields(parsed, endpoint, action, 0.0, None), "rules": rule_ids(errors),
                            "violations": [bounded(str(e)) for e in errors[:20]]})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
               "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
        for key in _FIELDS:
            if hasattr(record, key):
                out[key] = getattr(record, key)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return _bounded_line(out)


def _bounded_line(out: dict) -> str:
    """One JSON line of at most MAX_LINE_CHARS: long lists and texts give way first."""
    line = json.dumps(out, separators=(",", ":"), default=str)
    for key in ("errors", "warnings", "violations"):
        while len(line) > MAX_LINE_CHARS and isinstance(out.get(key), list) and out[key]:
            out[key] = out[key][:-1] if len(out[key]) > 1 else None
            out["truncated"] = True
            line = json.dumps(out, separators=(",", ":"), default=str)
    for key in ("exception", "msg"):
        if len(line) > MAX_LINE_CHARS and isinstance(out.get(key), str):
            over = len(line) - MAX_LINE_CHARS
            out[key] = cut(out[key], max(64, len(out[key]) - over - 8))
            out["truncated"] = True
            line = json.dumps(out, separators=(",", ":"), default=str)
    if len(line) > MAX_LINE_CHARS:      # still too long: the essentials only
        line = json.dumps({k: out.get(k) for k in ("ts", "level", "logger", "uid", "verdict")} |
                          {"msg": cut(str(out.get("msg", "")), 1000), "truncated": True}, separators=(",", ":"),
                          default=str)
    return line


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{k}={getattr(record, k)}" for k in _FIELDS if hasattr(record, k))
        text = f"{self.formatTime(record)} {record.levelname} {record.name}: {record.getMessage()}"
        text = f"{text} {extra}" if extra else text
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def gunicorn_logconfig(level: str = "info", fmt: str = "json") -> dict:
    """gunicorn's `logconfig_dict`: its error log (master and workers) through this
    module's formatter, on stderr, so that under logFormat json every line is JSON."""
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"webhook": {"()": f"{__name__}.{'JsonFormatter' if fmt == 'json' else 'TextFormatter'}"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "webhook", "stream": "ext://sys.stderr"}},
        "root": {"level": level.upper(), "handlers": ["stderr"]},
        "loggers": {"gunicorn.error": {"level": level.upper(), "handlers": [], "propagate": True},
                    "gunicorn.access": {"level": "INFO", "handlers": [], "propagate": True}},
    }


def setup(level: str = "info", fmt: str = "json") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel("WARNING")
