#!/usr/bin/env python3
"""Write what is derived from the server settings' fields (webhook/server_settings.py):
the `server` section of schemas/config.schema.json, the `server` section of the
chart's values.schema.json, and the settings table of docs/operations.md.
tests/unit/test_server_settings.py checks all three agree with the fields.

    python3 hack/server-settings.py          # rewrite in place
    python3 hack/server-settings.py --check  # exit 1 when one is stale"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from webhook import server_settings  # noqa: E402

CONFIG = os.path.join(ROOT, "schemas", "config.schema.json")
VALUES = os.path.join(ROOT, "charts", "workload-webhook", "values.schema.json")
OPERATIONS = os.path.join(ROOT, "docs", "operations.md")
TABLE_START = "<!-- server settings: written by hack/server-settings.py from webhook/server_settings.py -->\n"
TABLE_END = "<!-- end of the server settings -->\n"


def _schema_with_server(path: str, for_chart: bool) -> str:
    with open(path) as f:
        schema = json.load(f)
    schema["properties"]["server"] = server_settings.json_schema(for_chart=for_chart)
    return json.dumps(schema, indent=2) + "\n"


def _operations() -> str:
    with open(OPERATIONS) as f:
        text = f.read()
    if TABLE_START not in text or TABLE_END not in text:
        raise SystemExit(f"{OPERATIONS}: the markers around the settings table are missing")
    before, rest = text.split(TABLE_START, 1)
    _, after = rest.split(TABLE_END, 1)
    return before + TABLE_START + server_settings.markdown_table() + TABLE_END + after


def wanted() -> dict[str, str]:
    return {CONFIG: _schema_with_server(CONFIG, False), VALUES: _schema_with_server(VALUES, True),
            OPERATIONS: _operations()}


def main(argv) -> int:
    stale = []
    for path, text in wanted().items():
        with open(path) as f:
            current = f.read()
        if text == current:
            continue
        if "--check" in argv:
            stale.append(os.path.relpath(path, ROOT))
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print(f"stale: {', '.join(stale)}: run python3 hack/server-settings.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
