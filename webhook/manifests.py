"""Reading manifests from files and directories: multi-document YAML, JSON,
and `kind: List`. Problems are reported per file, never raised.

Hostile files are bounded: only regular files are read (a FIFO or a link to
/dev/zero in a directory is reported, not opened), at most MAX_FILE_BYTES of
each, and a document whose YAML aliases expand past MAX_NODES nodes (a
"billion laughs") is refused before anything walks it, as kube-apiserver's YAML
decoder refuses excessive aliasing."""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from typing import Any, Iterator

import yaml

SUFFIXES = (".yaml", ".yml", ".json")
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_NODES = 1_000_000        # a 1.5 MiB object has about a hundred thousand


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):   # libyaml when present: ~12x faster
    """Safe YAML without timestamp conversion: `2026-11-29T00:00:00Z` stays a
    string, as the API server would read it. A key given twice is an error, as
    kubectl's strict decoding says (PyYAML would keep the last one silently)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:            # an unhashable key: the base class reports it
                    continue
                if first is not key_node.start_mark:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (first at line {first.line + 1})", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class TooLarge(ValueError):
    pass


def _bounded(doc: Any, budget: int = MAX_NODES) -> Any:
    """`doc` itself, once its expanded tree is known to have at most `budget` nodes."""
    stack, seen = [doc], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > budget:
            raise TooLarge(f"a document expands to more than {budget} nodes (YAML aliases?)")
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return doc


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
        if p == "-" or (os.path.exists(p) and not os.path.isdir(p)):
            yield p                           # not a regular file: _read reports it
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
        text = sys.stdin.read(MAX_FILE_BYTES + 1)
    else:
        mode = os.stat(path).st_mode          # before open: opening a FIFO would block
        if not stat.S_ISREG(mode):
            raise TooLarge("not a regular file")
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_FILE_BYTES + 1)
    if len(text) > MAX_FILE_BYTES:
        raise TooLarge(f"larger than {MAX_FILE_BYTES} bytes")
    return text


def _no_duplicate_keys(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"duplicate key {twice!r}")
    return dict(pairs)


def _syntax_problem(exc: Exception, what: str) -> str:
    """One line, with where: `line L, column C: problem`."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid {what}: line {exc.lineno}, column {exc.colno}: {exc.msg}"
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
    if mark is not None:
        return f"not valid {what}: line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"not valid {what}: {problem}"


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
                parsed = [json.loads(text, object_pairs_hook=_no_duplicate_keys)]
            else:
                parsed = [_bounded(doc) for doc in yaml.load_all(text, Loader=_Loader)]
        except TooLarge as exc:
            problems.append(FileProblem(path, f"not read: {exc}"))
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(FileProblem(path, f"cannot read: {exc}"))
            continue
        except (yaml.YAMLError, ValueError) as exc:      # json.JSONDecodeError and duplicate keys are ValueErrors
            problems.append(FileProblem(path, _syntax_problem(exc, "JSON" if path.endswith(".json") else "YAML")))
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
