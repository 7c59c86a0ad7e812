#!/usr/bin/env python3
"""Write the chart's values.schema.json `config` from the service's own config
schema (schemas/config.schema.json), so `helm install` refuses a config typo
naming its path instead of Pods that crash-loop on it. The chart decides
`server` and `certificates` itself, so they are left out. `global` is allowed
(the chart as a subchart). tests/unit/test_chart_schema.py checks it is in sync.

    python3 hack/chart-schema.py          # rewrite in place
    python3 hack/chart-schema.py --check  # exit 1 when stale"""
import copy
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "schemas", "config.schema.json")
VALUES = os.path.join(ROOT, "charts", "workload-webhook", "values.schema.json")
CHART_DECIDES = ("server", "certificates")


def generate(values: dict, config: dict) -> dict:
    out = copy.deepcopy(values)
    embedded = {k: v for k, v in copy.deepcopy(config).items() if k not in ("$schema", "$id", "title", "$defs")}
    embedded["properties"] = {k: v for k, v in embedded["properties"].items() if k not in CHART_DECIDES}
    embedded["description"] = ("the webhook's configuration file (schemas/config.schema.json, less server and "
                               "certificates, which the chart sets)")
    out["properties"]["config"] = embedded
    out["properties"]["global"] = {"type": "object", "description": "values shared by a parent chart"}
    out["$defs"] = {**(values.get("$defs") or {}), **(config.get("$defs") or {})}
    return out


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2) + "\n"


def main(argv) -> int:
    with open(VALUES) as f:
        values = json.load(f)
    with open(CONFIG) as f:
        config = json.load(f)
    text = render(generate(values, config))
    with open(VALUES) as f:
        current = f.read()
    if "--check" in argv:
        if text != current:
            print(f"{VALUES} is stale: run python3 hack/chart-schema.py", file=sys.stderr)
            return 1
        return 0
    with open(VALUES, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
