"""The deliberate differences between the webhook and upstream's own code, as
docs/rules.md declares them (the YAML list under "Where the webhook differs
from upstream's own code"), and the one function that explains a case's
differences with them. The differential test (test_upstream_oracle.py)
applies exactly this list: an error on one side only is explained by the
first declaration that matches it, or it is a failure; a declaration that
explains nothing in a run is a failure too.

A declaration's keys (all but `id`, `why` and `side` optional):

- `side`: `webhook` (an error only the webhook reports) or `upstream`;
- `embeddings`, `operations`: where it applies (default: everywhere);
- `type`, `field` (regular expressions the whole type and path match), `detail`
  (searched in the error's text), `rule` (the webhook error's rule id);
- `unchanged`: paths the update left as they were (`PATH=DEFAULT`: an absent
  field counts as DEFAULT); `{group}` is the error's group (its path up to
  the `scheduling` that holds it); list items are matched by `name`;
- `beneath`: the other side reported an error whose text matches, at this
  error's path or above it (the webhook stopped there: a frozen block);
- `alongside`: the other side reported an error of this type anywhere;
- `repeated_names: true`: the claim list holding the error repeats a name (in
  the object, or at the same place in the stored one);
- `prune: true` (webhook side): the error names a field the webhook refuses
  and upstream's decoding drops; the case is compared again with those
  fields removed, as upstream read it.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import yaml

from webhook.blocks.common import same

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RULES = os.path.join(REPO, "docs", "rules.md")
HEADING = "## Where the webhook differs from upstream's own code"
KEYS = {"id", "why", "side", "embeddings", "operations", "type", "field", "detail", "rule", "unchanged", "beneath",
        "alongside", "repeated_names", "prune"}


@dataclass(frozen=True)
class Error:
    type: str
    field: str
    detail: str = ""
    rule: str | None = None


@dataclass
class Case:
    """One judged case: its embedding, operation and objects, and both sides' errors."""
    embedding: str
    operation: str
    obj: dict
    old: dict | None
    upstream: list[Error]
    webhook: list[Error]


@dataclass(frozen=True)
class Declaration:
    id: str
    side: str
    why: str = ""
    embeddings: tuple = ()
    operations: tuple = ()
    type: str | None = None
    field: str | None = None
    detail: str | None = None
    rule: str | None = None
    unchanged: tuple = ()
    beneath: str | None = None
    alongside: str | None = None
    repeated_names: bool = False
    prune: bool = False

    def explains(self, key: tuple[str, str], side: str, case: Case) -> bool:
        mine = [e for e in (case.webhook if side == "webhook" else case.upstream) if (e.type, e.field) == key]
        others = case.upstream if side == "webhook" else case.webhook
        return (side == self.side
                and (not self.embeddings or case.embedding in self.embeddings)
                and (not self.operations or case.operation in self.operations)
                and (self.type is None or re.fullmatch(self.type, key[0]) is not None)
                and (self.field is None or re.fullmatch(self.field, key[1]) is not None)
                and (self.detail is None or any(re.search(self.detail, e.detail) for e in mine))
                and (self.rule is None or any(e.rule == self.rule for e in mine))
                and all(_unchanged(case, template, key[1]) for template in self.unchanged)
                and (self.beneath is None or any(re.search(self.beneath, o.detail) and _within(key[1], o.field)
                                                 for o in others))
                and (self.alongside is None or any(o.type == self.alongside for o in others))
                and (not self.repeated_names or _repeats_names(case, key[1])))


def load(path: str = RULES) -> list[Declaration]:
    """The declarations of docs/rules.md, checked: known keys, unique ids, a side each."""
    text = open(path, encoding="utf-8").read()
    if HEADING not in text:
        raise AssertionError(f"{path} has no section {HEADING!r}")
    section = text.split(HEADING, 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    if match is None:
        raise AssertionError(f"the section {HEADING!r} of {path} has no ```yaml list")
    out = []
    for entry in yaml.safe_load(match.group(1)):
        unknown = set(entry) - KEYS
        if unknown or entry.get("side") not in ("webhook", "upstream") or not entry.get("why"):
            raise AssertionError(f"declaration {entry.get('id')!r}: unknown keys {sorted(unknown)} or no side/why")
        out.append(Declaration(**{k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}))
    ids = [d.id for d in out]
    if len(ids) != len(set(ids)):
        raise AssertionError(f"declaration ids are not unique: {ids}")
    return out


def _segments(path: str) -> list[str]:
    return re.findall(r"[^.\[\]]+|\[\d+\]", path)


def _get(obj: Any, path: str) -> Any:
    node = obj
    for seg in _segments(path):
        if seg.startswith("["):
            i = int(seg[1:-1])
            node = node[i] if isinstance(node, list) and i < len(node) else None
        else:
            node = node.get(seg) if isinstance(node, dict) else None
    return node


def _group(path: str) -> str:
    """The error's group: its path up to the `scheduling` that holds the blocks."""
    segs = _segments(path)
    end = segs.index("scheduling") + 1 if "scheduling" in segs else len(segs)
    return "".join(s if s.startswith("[") else ("." if i else "") + s for i, s in enumerate(segs[:end]))


def _stored_path(obj: Any, old: Any, path: str) -> str | None:
    """The path of the same field in the stored object: list items with a `name` are matched
    by it (as the webhook and workloadbuilder match them), others by position."""
    out, node, stored = [], obj, old
    for seg in _segments(path):
        if seg.startswith("["):
            i = int(seg[1:-1])
            item = node[i] if isinstance(node, list) and i < len(node) else None
            if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(stored, list):
                i = next((j for j, o in enumerate(stored) if isinstance(o, dict) and o.get("name") == item["name"]),
                         None)
                if i is None:
                    return None
            node = item
            stored = stored[i] if isinstance(stored, list) and i < len(stored) else None
            out.append(f"[{i}]")
        else:
            node = node.get(seg) if isinstance(node, dict) else None
            stored = stored.get(seg) if isinstance(stored, dict) else None
            out.append(("." if out else "") + seg)
    return "".join(out)


def _unchanged(case: Case, template: str, error_path: str) -> bool:
    """`PATH` or `PATH=DEFAULT` (the value an absent field stands for) is the same in both objects."""
    path, _, default = template.replace("{group}", _group(error_path)).partition("=")
    stored = _stored_path(case.obj, case.old, path) if case.old is not None else None
    if stored is None:
        return False
    fallback = yaml.safe_load(default) if default else None
    values = [_get(o, p) for o, p in ((case.obj, path), (case.old, stored))]
    return same(*[fallback if v is None else v for v in values])


def _repeats_names(case: Case, error_path: str) -> bool:
    """The claim list holding the error repeats a name, in the object or at the same place in the stored one."""
    match = re.match(r"(.*\.resourceClaims)(\[\d+\].*)?$", error_path)
    if match is None:
        return False
    lists = [_get(case.obj, match.group(1))]
    if case.old is not None and (stored := _stored_path(case.obj, case.old, match.group(1))) is not None:
        lists.append(_get(case.old, stored))
    for claims in lists:
        names = [c.get("name") or "" for c in claims or () if isinstance(c, dict)]
        if len(names) != len(set(names)):
            return True
    return False


def _within(path: str, above: str) -> bool:
    return path == above or path.startswith(above + ".") or path.startswith(above + "[")


@dataclass
class Outcome:
    unexplained: list[tuple[str, tuple[str, str]]] = field(default_factory=list)   # (side, (type, field))
    hits: dict[str, int] = field(default_factory=dict)


def explain(case: Case, declarations: list[Declaration],
            rejudge: Callable[[dict, dict | None], list[Error]], prune: Callable[[dict, list[str]], dict]) -> Outcome:
    """Every error on one side only, explained by a declaration or listed as unexplained.
    `rejudge(obj, old)` is the webhook on other objects; `prune(obj, paths)` drops fields."""
    out = Outcome()
    pruning = [d for d in declarations if d.prune]
    for d in pruning:
        for _ in range(20):          # the webhook may name one unknown field of a block at a time
            dropped = [e.field for e in case.webhook if d.explains((e.type, e.field), "webhook", case)]
            stored = _unknown_in(case.old, case.embedding, rejudge, d) if case.old is not None else []
            if not (dropped or stored):
                break
            out.hits[d.id] = out.hits.get(d.id, 0) + len(dropped) + len(stored)
            obj = prune(case.obj, dropped)
            old = prune(case.old, stored) if case.old is not None else None
            case = Case(case.embedding, case.operation, obj, old, case.upstream, rejudge(obj, old))
    webhook_keys = {(e.type, e.field) for e in case.webhook}
    upstream_keys = {(e.type, e.field) for e in case.upstream}
    for side, keys in (("webhook", webhook_keys - upstream_keys), ("upstream", upstream_keys - webhook_keys)):
        for key in sorted(keys):
            d = next((d for d in declarations if not d.prune and d.explains(key, side, case)), None)
            if d is None:
                out.unexplained.append((side, key))
            else:
                out.hits[d.id] = out.hits.get(d.id, 0) + 1
    return out


def _unknown_in(old: dict, embedding: str, rejudge: Callable, d: Declaration) -> list[str]:
    """The stored object's own unknown fields: what the webhook names in it, judged as a create."""
    stored = Case(embedding, "CREATE", old, None, [], rejudge(old, None))
    return [e.field for e in stored.webhook if d.explains((e.type, e.field), "webhook", stored)]
