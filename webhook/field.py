"""Field paths and field errors, as Kubernetes' field package has them
(k8s.io/apimachinery/pkg/util/validation/field: Path, Error, Invalid,
Required, Forbidden, ...). Every rule reports through these, so the server,
the CLI and the tests all see the same (type, field, value, detail) tuples.
Config path patterns with `[*]` are webhook.paths."""
from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import Any, Iterable, Union

Segment = Union[str, int]

class _Omit:
    __slots__ = ()

    def __reduce__(self) -> str:        # unpickled as the one marker, so `is OMIT` still holds
        return "OMIT"

    def __repr__(self) -> str:
        return "OMIT"


# Marker for "no bad value to print" (upstream: field.omitValue).
OMIT = _Omit()


class Path(tuple):
    """An immutable field path: ('spec', 'templates', 0, 'name') -> spec.templates[0].name.

    Map keys that are not plain identifiers (label keys) are rendered as
    `[key]`, as upstream does for `metadata.labels[app.kubernetes.io/name]`.
    """

    __slots__ = ()

    def __new__(cls, *segments: Segment) -> "Path":
        return super().__new__(cls, segments)

    def __getnewargs__(self) -> tuple:     # pickled as its segments (tuple's own would nest them)
        return tuple(self)

    def child(self, *segments: Segment) -> "Path":
        return tuple.__new__(Path, self + segments)     # not through __new__: paths are made per field judged

    def index(self, i: int) -> "Path":
        return tuple.__new__(Path, (*self, i))

    def key(self, k: str) -> "Path":
        return Path(*self, _MapKey(k))

    def __str__(self) -> str:
        out = []
        for seg in self:
            if isinstance(seg, int):
                out.append(f"[{seg}]")
            elif isinstance(seg, _MapKey):
                out.append(f"[{str.__str__(seg)}]")
            else:
                out.append(("." if out else "") + seg)
        return "".join(out)

    def __repr__(self) -> str:
        return f"Path({str(self)!r})"


class _MapKey(str):
    """A map key segment: rendered `[key]` instead of `.key`."""

    __slots__ = ()


ROOT = Path()


# Upstream type names (field.ErrorType.String()) and Status cause reasons.
TYPES = {
    "Required": ("Required value", "FieldValueRequired"),
    "Invalid": ("Invalid value", "FieldValueInvalid"),
    "Forbidden": ("Forbidden", "FieldValueForbidden"),
    "NotSupported": ("Unsupported value", "FieldValueNotSupported"),
    "TooMany": ("Too many", "FieldValueTooMany"),
    "Duplicate": ("Duplicate value", "FieldValueDuplicate"),
}
# Types whose body never prints the bad value (as upstream).
_NO_VALUE = {"Required", "Forbidden"}
_MAX_VALUE_CHARS = 80


def format_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, str):
        text = json.dumps(value[: _MAX_VALUE_CHARS + 1], ensure_ascii=False)
    else:
        text = _preview(value, _MAX_VALUE_CHARS + 1)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


def _preview(value: Any, budget: int) -> str:
    """Compact JSON of `value`, stopping once `budget` characters are written:
    a huge (or YAML-alias-expanded) value costs its first few nodes, not its size."""
    out: list[str] = []
    used = 0
    stack: list[Any] = [value]
    while stack and used < budget:
        node = stack.pop()
        if isinstance(node, _Token):
            piece = node.text
        elif isinstance(node, dict):
            items = sorted(node.items(), key=lambda kv: str(kv[0])) if len(node) <= 64 else list(node.items())
            piece = "{"
            stack.append(_Token("}"))
            for i in range(len(items) - 1, -1, -1):
                k, v = items[i]
                stack.append(v)
                stack.append(_Token(("," if i else "") + json.dumps(str(k), ensure_ascii=False) + ":"))
        elif isinstance(node, (list, tuple)):
            piece = "["
            stack.append(_Token("]"))
            for i in range(len(node) - 1, -1, -1):
                stack.append(node[i])
                if i:
                    stack.append(_Token(","))
        elif isinstance(node, str):
            piece = json.dumps(node[:budget], ensure_ascii=False)
        elif node is None or isinstance(node, (bool, int, float)):
            piece = format_value(node)
        else:
            piece = repr(node)[:budget]
        out.append(piece)
        used += len(piece)
    return "".join(out)


class _Token:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


@dataclass(frozen=True)
class FieldError:
    type: str
    field: Path
    value: Any = OMIT
    detail: str = ""
    rule: str | None = None    # the id of this service's own policy rule (docs/rules.md); None for mirror rules
    # The catalogue id of the mirror rule that found it (docs/rules.md): counted and logged, never
    # printed (a mirror keeps the API server's text) and never relaxed by enforcement.
    mirror: str | None = dataclasses.field(default=None, compare=False)
    # The feature gate that, off, makes this error (`Forbidden: disabled by feature-gate G`): data for
    # `validate`'s hint naming the config key that turns it on; never printed here (the text is the API server's).
    gate: str | None = dataclasses.field(default=None, compare=False)
    # Which of its rule's errors it is, for code that treats one of them apart (a block's error
    # that one embedding does not report, say): an id, never printed, never compared.
    code: str | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"unknown field error type {self.type!r}")

    @property
    def reason(self) -> str:
        return TYPES[self.type][1]

    def body(self) -> str:
        """The part after the field, as kubectl prints it: `Invalid value: 0: detail`."""
        text = TYPES[self.type][0]
        if self.type not in _NO_VALUE and self.value is not OMIT:
            text += ": " + format_value(self.value)
        if self.detail:
            text += ": " + self.detail
        if self.rule:
            text += f" ({self.rule})"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if len(self.field) else self.body()

    @property
    def id(self) -> str | None:
        """The rule that found it: an own policy rule's id, else the mirror's."""
        return self.rule or self.mirror

    def as_dict(self) -> dict:
        out = {"field": str(self.field), "type": self.type, "detail": self.detail or self.body()}
        if self.rule:
            out["rule"] = self.rule
        return out

    @property
    def identity(self) -> tuple:
        """What makes two errors "the same error", for every ratchet and every de-duplication:
        the parts the dataclass compares (type, field, value, detail, rule; not the mirror id,
        which is never printed), hashable whatever the value holds."""
        return self.type, self.field, self.detail, self.rule, _frozen(self.value)


def _frozen(v: Any) -> Any:
    """A hashable stand-in of a field error's value: equal values, equal stand-ins."""
    if isinstance(v, dict):
        return ("{", tuple(sorted((str(k), _frozen(x)) for k, x in v.items())))
    if isinstance(v, (list, tuple)):
        return ("[" if isinstance(v, list) else "(", tuple(_frozen(x) for x in v))
    if v is OMIT:
        return "omit", None
    try:
        hash(v)
    except TypeError:           # a set, say: no rule reports one, but an identity must never raise
        return type(v).__name__, repr(v)
    return type(v).__name__, v


class FieldWarning(str):
    """A warning of the rules, as a value: where (`path`), what (`message`) and which rule
    says it (`rule`, or None). It is the text answered too (a `str`: `path: message (RULE)`),
    so the admission answer's warnings, the CLI's lines and every `==` on text stay as they
    were, while a reader that places or groups warnings reads the parts, never the text."""

    path: Path
    message: str
    rule: str | None

    def __new__(cls, path: Path, message: str, rule: str | None = None, text: str | None = None) -> "FieldWarning":
        if text is None:
            text = f"{path}: {message}" + (f" ({rule})" if rule else "") if len(path) else message
        self = super().__new__(cls, text)
        self.path, self.message, self.rule = path, message, rule
        return self

    def shortened(self, limit: int, mark: str = "...") -> "FieldWarning":
        """The same warning, its text cut to at most `limit` characters (`mark` shows the cut)."""
        if len(self) <= limit:
            return self
        return FieldWarning(self.path, self.message, self.rule, str.__str__(self)[:limit - len(mark)] + mark)

    def __reduce__(self):       # pickled with its parts (the forked `validate` sends Results back)
        return FieldWarning, (self.path, self.message, self.rule, str.__str__(self))


def warning(path: Path, message: str, rule: str | None = None) -> FieldWarning:
    """A warning at `path` (as upstream prints a field: `spec.x[0]`), found by `rule` if it is one of ours."""
    return FieldWarning(path, message, rule)


def by_rule(errors: Iterable[FieldError], rule: str) -> list[FieldError]:
    """`errors` marked as this service's policy rule `rule` (their text then ends in `(RULE)`)."""
    return [e if e.rule else dataclasses.replace(e, rule=rule) for e in errors]


def mirrors(errors: Iterable[FieldError], rule: str) -> list[FieldError]:
    """`errors` found by the mirror rule `rule`, unless they already name one (their text unchanged)."""
    return [e if e.rule or e.mirror else dataclasses.replace(e, mirror=rule) for e in errors]


def found_by(rule: str):
    """Decorates a mirror rule's function: the errors it returns carry the mirror id `rule`."""
    def decorate(judge):
        @functools.wraps(judge)
        def judged(*args, **kwargs):
            errors = judge(*args, **kwargs)
            return mirrors(errors, rule) if errors else errors
        return judged
    return decorate


# Constructors named like upstream's field.Required(...), field.Invalid(...).
def required(path: Path, detail: str = "") -> FieldError:
    return FieldError("Required", path, OMIT, detail)


def invalid(path: Path, value: Any, detail: str) -> FieldError:
    return FieldError("Invalid", path, value, detail)


def forbidden(path: Path, detail: str) -> FieldError:
    return FieldError("Forbidden", path, OMIT, detail)


def gated_off(path: Path, gate: str) -> FieldError:
    """`path` is set while feature gate `gate` is off, as the API server refuses it (it knows its gate)."""
    return FieldError("Forbidden", path, OMIT, f"disabled by feature-gate {gate}", gate=gate)


def not_supported(path: Path, value: Any, supported: Iterable[str]) -> FieldError:
    quoted = ", ".join(json.dumps(s) for s in sorted(supported))
    return FieldError("NotSupported", path, value, f"supported values: {quoted}")


def too_many(path: Path, actual: int, limit: int) -> FieldError:
    return FieldError("TooMany", path, actual, f"must have at most {limit} item{'s' if limit != 1 else ''}")


def duplicate(path: Path, value: Any) -> FieldError:
    return FieldError("Duplicate", path, value, "")


IMMUTABLE = "field is immutable"


def immutable(path: Path, value: Any = OMIT) -> FieldError:
    return FieldError("Invalid", path, value, IMMUTABLE)
