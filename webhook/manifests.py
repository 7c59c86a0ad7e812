"""Reading manifests from files and directories: multi-document YAML, JSON,
and `kind: List`. Problems are reported per file, never raised."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Iterator

import yaml

SUFFIXES = (".yaml", ".yml", ".json")


class _Loader(yaml.SafeLoader):
    """Safe YAML without timestamp conversion: `2026-11-29T00:00:00Z` stays a
    string, as the API server would read it."""


_Loader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass
class Document:
    file: str
    obj: Any


@dataclass
class FileProblem:
    file: str
    message: str


def expand_paths(paths: list[str]) -> Iterator[str]:
    """Files as given; directories walked (sorted) for .yaml/.yml/.json. Raises FileNotFoundError."""
    for p in paths:
        if p == "-" or os.path.isfile(p):
            yield p
        elif os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(SUFFIXES):
                        yield os.path.join(root, name)
        else:
            raise FileNotFoundError(p)


def _read(path: str) -> str:
    if path == "-":
        import sys
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def _flatten(obj: Any) -> Iterator[Any]:
    if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
        yield from obj["items"]
    elif obj is not None:
        yield obj


def load(paths: list[str]) -> tuple[list[Document], list[FileProblem]]:
    docs: list[Document] = []
    problems: list[FileProblem] = []
    for path in expand_paths(paths):
        try:
            text = _read(path)
            if path.endswith(".json"):
                parsed = [json.loads(text)]
            else:
                parsed = list(yaml.load_all(text, Loader=_Loader))
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(FileProblem(path, f"cannot read: {exc}"))
            continue
        except (yaml.YAMLError, json.JSONDecodeError) as exc:
            problems.append(FileProblem(path, f"not valid {'JSON' if path.endswith('.json') else 'YAML'}: "
                                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"))
            continue
        except RecursionError:
            problems.append(FileProblem(path, "nested too deeply"))
            continue
        for doc in parsed:
            docs.extend(Document(path, obj) for obj in _flatten(doc))
    return docs, problems


def identity(obj: Any) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name) of a manifest, for matching --old objects."""
    if not isinstance(obj, dict):
        return ("", "", "", "")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return (group, str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or ""))
