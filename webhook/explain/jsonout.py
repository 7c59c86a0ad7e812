"""The explain tree as JSON (`-o json`): the tree builder's result as it is, plus
what could not be read. Stable keys; documented in docs/cli.md."""
from __future__ import annotations

import json


def render(result: dict, problems: list[str] = ()) -> str:
    return json.dumps({**result, "problems": list(problems)}, indent=2, sort_keys=False) + "\n"
