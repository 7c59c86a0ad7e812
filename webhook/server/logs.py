"""Structured logs: one JSON object per line (or plain text), with the request
uid, kind, namespace/name, verdict and latency; never object bodies."""
from __future__ import annotations

import json
import logging
import sys
import time

_FIELDS = ("uid", "endpoint", "kind", "operation", "namespace", "object", "verdict", "latency_ms", "dry_run",
           "status", "reason", "errors", "warnings")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
               "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
        for key in _FIELDS:
            if hasattr(record, key):
                out[key] = getattr(record, key)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, separators=(",", ":"), default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{k}={getattr(record, k)}" for k in _FIELDS if hasattr(record, k))
        text = f"{self.formatTime(record)} {record.levelname} {record.name}: {record.getMessage()}"
        text = f"{text} {extra}" if extra else text
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def setup(level: str = "info", fmt: str = "json") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel("WARNING")
