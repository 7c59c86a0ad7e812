"""One request to a WSGI app (Flask: health, readiness, metrics, and the
404/405 answers), called in the event loop from a parsed request: these routes
never wait for the network, and they are called by probes, not by bursts."""
from __future__ import annotations

import io
import sys
from typing import Callable


def call(app: Callable, method: str, path: str, query: str, headers: list[tuple[bytes, bytes]], body: bytes,
         server_port: int) -> tuple[str, list[tuple[str, str]], bytes]:
    """(status line, headers, body) of the app's answer (PEP 3333)."""
    environ = {
        "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "localhost", "SERVER_PORT": str(server_port), "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.version": (1, 0), "wsgi.url_scheme": "https", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
        "CONTENT_LENGTH": str(len(body)),
    }
    for name, value in headers:
        key = name.decode("latin-1").upper().replace("-", "_")
        text = value.decode("latin-1")
        if key == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = text
        elif key != "CONTENT_LENGTH":
            key = "HTTP_" + key
            environ[key] = f"{environ[key]},{text}" if key in environ else text
    answer: list = []

    def start_response(status: str, response_headers: list, exc_info=None):
        answer[:] = [status, list(response_headers)]
        return lambda data: None      # the write() callable: not used by Flask

    result = app(environ, start_response)
    try:
        data = b"".join(result)
    finally:
        if hasattr(result, "close"):
            result.close()
    return answer[0], answer[1], data
