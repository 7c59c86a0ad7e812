"""Reading manifests from files and directories: multi-document YAML, JSON,
and `kind: List`. Problems are reported per file, never raised. Each object
keeps its Origin, from which positions.py finds a field's line and column.

Hostile files are bounded: only regular files are read (a FIFO or a link to
/dev/zero in a directory is reported, not opened), at most MAX_FILE_BYTES of
each, and a document whose YAML aliases expand past MAX_NODES nodes (a
"billion laughs") is refused while it is built (webhook.manifests.yaml_documents), as
kube-apiserver's YAML decoder refuses excessive aliasing. A large YAML stream
is read on several cores (webhook.manifests.parallel_yaml)."""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from typing import Any, Iterator

import yaml

from webhook import collector
from webhook.manifests import parallel_yaml
from webhook.manifests.positions import Origin, Source
from webhook.manifests.yaml_documents import TooLarge, is_list

SUFFIXES = (".yaml", ".yml", ".json")
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_NODES = 1_000_000        # a 1.5 MiB object has about a hundred thousand


@dataclass(slots=True)
class Document:
    file: str
    obj: Any
    origin: Origin | None = None     # where it is in the file (line and column of its fields)


@dataclass
class FileProblem:
    file: str
    message: str
    line: int | None = None          # 1-based, for a syntax error (then not repeated in the message)
    column: int | None = None

    @property
    def where(self) -> str:
        """`file:line:column` as compilers name a place (editors jump to it), else the file."""
        return f"{self.file}:{self.line}:{self.column or 1}" if self.line else self.file


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
    return text[1:] if text.startswith("\ufeff") else text    # libyaml does not count a BOM in its indices


def _no_duplicate_keys(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"duplicate key {twice!r}")
    return dict(pairs)


def _syntax_problem(path: str, exc: Exception, what: str) -> FileProblem:
    """One line; where it is, in the problem's line and column."""
    if isinstance(exc, json.JSONDecodeError):
        return FileProblem(path, f"not valid {what}: {exc.msg}", exc.lineno, exc.colno)
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
    if mark is not None:
        return FileProblem(path, f"not valid {what}: {problem}", mark.line + 1, mark.column + 1)
    return FileProblem(path, f"not valid {what}: {problem}")


def _parse(path: str, text: str) -> list[tuple[Any, Any, Any]]:
    """(object, span, item spans) per document; JSON has one document and no spans."""
    if path.endswith(".json"):
        return [(json.loads(text, object_pairs_hook=_no_duplicate_keys), None, None)]
    return parallel_yaml.read(text, MAX_NODES)


def _objects(path: str, source: Source, obj: Any, span, item_spans) -> Iterator[Document]:
    """The objects of one document: itself, or a List's items."""
    if is_list(obj):
        items = obj["items"]
        spans = item_spans if item_spans is not None and len(item_spans) == len(items) else None
        for i, item in enumerate(items):
            if spans is not None:
                yield Document(path, item, Origin(source, spans[i]))
            else:
                yield Document(path, item, Origin(source, span, ("items", i)))
    elif obj is not None:
        yield Document(path, obj, Origin(source, span))


def load(paths: list[str]) -> tuple[list[Document], list[FileProblem]]:
    docs: list[Document] = []
    problems: list[FileProblem] = []
    with collector.paused():        # it was half the time of reading 50 MB
        for path in expand_paths(paths):
            what = "JSON" if path.endswith(".json") else "YAML"
            try:
                text = _read(path)
                parsed = _parse(path, text)
            except TooLarge as exc:
                problems.append(FileProblem(path, f"not read: {exc}"))
                continue
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(FileProblem(path, f"cannot read: {exc}"))
                continue
            except (yaml.YAMLError, ValueError) as exc:  # json.JSONDecodeError and duplicate keys are ValueErrors
                problems.append(_syntax_problem(path, exc, what))
                continue
            except RecursionError:
                problems.append(FileProblem(path, "nested too deeply"))
                continue
            source = Source(text, what == "JSON")
            for obj, span, item_spans in parsed:
                docs.extend(_objects(path, source, obj, span, item_spans))
    return docs, problems


def identity(obj: Any) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name) of a manifest, for matching --old objects."""
    if not isinstance(obj, dict):
        return ("", "", "", "")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return (group, str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name") or ""))
