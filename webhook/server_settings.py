"""The server's settings: one frozen dataclass, built once by `serve` from the
config file's `server:` section, WW_* environment variables and flags (flags
win, then the environment), and handed as it is to the gunicorn master and
every worker (webhook/server/gunicorn_app.py).

Each field states its default, type, bounds, help and how the chart treats it
(`setting`); everything else is derived from the fields:

- the `serve` flags and environment variables: field `fooBarSeconds` is
  `--foo-bar` and `WW_FOO_BAR` (`flag`, `env_name`, `add_flags`, `given`);
- the `server` properties of schemas/config.schema.json and of the chart's
  values.schema.json (`json_schema`), and the settings table of
  docs/operations.md (`markdown_table`): hack/server-settings.py writes them,
  tests/unit/test_server_settings.py checks they agree with the fields.

So a new setting is a new field here, and nothing else.
"""
import argparse
import dataclasses
from typing import Any, Mapping

ENV_PREFIX = "WW_"
MIB = 1024 * 1024
_JSON_TYPE = {int: "integer", float: "number", str: "string", bool: "boolean"}
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "minLength")
_METAVAR = {int: "N", float: "SECONDS", str: "VALUE"}


def setting(default: Any, help: str, *, choices: tuple[str, ...] | None = None, doc: str = "",
            chart: dict | None = dataclasses.MISSING, **bounds: Any) -> Any:
    """A field of ServerSettings. `bounds`: JSON Schema's minimum, maximum,
    exclusiveMinimum, minLength. `doc`: what docs/operations.md adds to `help`
    (markdown). `chart`: the chart's own bounds for the field (values.schema.json),
    or None when the chart sets the field itself and offers no value."""
    unknown = set(bounds) - set(_BOUNDS)
    if unknown:
        raise TypeError(f"unknown bounds {sorted(unknown)}")
    metadata = {"help": help, "choices": choices, "doc": doc, "bounds": bounds,
                "chart": {} if chart is dataclasses.MISSING else chart}
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    port: int = setting(8443, "the admission port (HTTPS)", minimum=1, maximum=65535, chart={"minimum": 1024})
    # /metrics on a port of its own, served by the master (webhook/server/metrics_listener.py).
    metricsPort: int = setting(
        0, "/metrics on a port of its own, served by the master; must differ from port; 0: on the admission port",
        minimum=0, maximum=65535, doc="([metrics](#metrics))",
        chart={"minimum": 1024, "description": "/metrics on a port of its own, served by the master; must differ "
                                               "from port"})
    metricsTLS: bool = setting(True, "the metrics port speaks TLS with the serving certificate; false: plain HTTP")
    bindAddress: str = setting("127.0.0.1", "the address both ports listen on", minLength=1,
                               doc="(the chart uses `0.0.0.0`)", chart=None)
    certDir: str = setting("certs", "the directory of tls.crt and tls.key (generated with a development CA when "
                           "absent)", minLength=1, chart=None)
    workers: int = setting(2, "gunicorn worker processes, each one event loop", minimum=1, maximum=64)
    maxBodyBytes: int = setting(
        7 * MIB, "the largest request body: two objects at kube-apiserver's 3 MiB request limit (an UPDATE) "
        "plus the AdmissionReview envelope", minimum=1024, maximum=100 * MIB)
    handshakeTimeoutSeconds: float = setting(5.0, "seconds a client may take for the TLS handshake",
                                             exclusiveMinimum=0, maximum=60)
    idleTimeoutSeconds: float = setting(
        30.0, "seconds a connection may wait for, and send, a request head (kept-alive idle time included)",
        minimum=1, maximum=600)
    maxConnections: int = setting(1000, "open connections per worker", minimum=10, maximum=100000,
                                  doc="(the chart sets 128: [memory](#memory))")
    gracefulTimeoutSeconds: int = setting(20, "seconds in-flight requests may take to finish after SIGTERM",
                                          minimum=1, maximum=600)
    bodyBudgetBytes: int = setting(
        16 * MIB, "request body bytes one worker holds at once, over all its connections; at least maxBodyBytes",
        minimum=1024, maximum=4 * 1024 * MIB, doc="([memory](#memory))")
    bodyTimeoutSeconds: float = setting(10.0, "seconds a request body may take from its start to its last byte",
                                        exclusiveMinimum=0, maximum=600)
    lookupTimeoutSeconds: float = setting(2.0, "seconds a PodGroup, Workload or namespace lookup may take",
                                          exclusiveMinimum=0, maximum=30)
    logLevel: str = setting("info", "the lowest level logged", choices=("debug", "info", "warning", "error"))
    logFormat: str = setting("json", "one JSON object per line, or plain text", choices=("json", "text"))
    cluster: str = setting(
        "auto", "where the cluster view comes from; auto: as kubectl finds a cluster (--kubeconfig, $KUBECONFIG, "
        "~/.kube/config, then in-cluster), else none", choices=("auto", "kubeconfig", "in-cluster", "disabled"),
        doc="`kubeconfig`: the kubeconfig only; `in-cluster`: the ServiceAccount only (a serving Pod has no "
            "kubeconfig); `disabled`: none ([finding the cluster](cli.md#finding-the-cluster))", chart=None)


FIELDS: tuple[dataclasses.Field, ...] = dataclasses.fields(ServerSettings)


# -- flags and environment variables --------------------------------------------

def flag(f: dataclasses.Field) -> str:
    """`--foo-bar` for field fooBarSeconds (a run of capitals is one word: metricsTLS is --metrics-tls)."""
    name = f.name.removesuffix("Seconds")
    words, word = [], ""
    for i, c in enumerate(name):
        if c.isupper() and word and not (word[-1].isupper() and (i + 1 == len(name) or name[i + 1].isupper())):
            words.append(word)
            word = ""
        word += c
    words.append(word)
    return "--" + "-".join(w.lower() for w in words)


def env_name(f: dataclasses.Field) -> str:
    return ENV_PREFIX + flag(f)[2:].replace("-", "_").upper()


def _flag_help(f: dataclasses.Field) -> str:
    default = _shown(f.default)
    return f"{f.metadata['help']}; default {default} (env {env_name(f)})".replace("%", "%%")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per field; each flag's value is None unless given (then it wins)."""
    for f in FIELDS:
        if f.type is bool:
            parser.add_argument(flag(f), dest=f.name, action=argparse.BooleanOptionalAction, default=None,
                                help=_flag_help(f))
        else:
            parser.add_argument(flag(f), dest=f.name, type=f.type, choices=f.metadata["choices"], default=None,
                                metavar=None if f.metadata["choices"] else
                                "SECONDS" if f.name.endswith("Seconds") else _METAVAR[f.type], help=_flag_help(f))


class BadValue(ValueError):
    def __init__(self, where: str, kind: type, raw: str):
        super().__init__(f"{where}: not a valid {kind.__name__}: {raw!r}")
        self.where = where


def _parse(kind: type, raw: str, where: str) -> Any:
    if kind is bool:
        word = raw.strip().lower()
        if word in ("true", "1", "yes"):
            return True
        if word in ("false", "0", "no"):
            return False
        raise BadValue(where, kind, raw)
    try:
        return kind(raw)
    except ValueError:
        raise BadValue(where, kind, raw) from None


def given(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings given by flags, else by WW_* environment variables (an empty
    variable is not given). Raises BadValue for a variable of the wrong type."""
    out = {}
    for f in FIELDS:
        value = getattr(args, f.name, None)
        if value is None and environ.get(env_name(f)):
            value = _parse(f.type, environ[env_name(f)], env_name(f))
        if value is not None:
            out[f.name] = value
    return out


# -- what is written from the fields -----------------------------------------------

def json_schema(for_chart: bool = False) -> dict:
    """The `server` object of the config schema, or (`for_chart`) of the chart's
    values schema: the fields the chart offers, with its own bounds."""
    properties = {}
    for f in FIELDS:
        m = f.metadata
        if for_chart and m["chart"] is None:
            continue
        prop: dict[str, Any] = {"enum": list(m["choices"])} if m["choices"] else {"type": _JSON_TYPE[f.type]}
        prop.update(m["bounds"])
        if for_chart:
            prop.update(m["chart"])
        else:
            prop["default"] = f.default
        prop["description"] = m["help"]
        properties[f.name] = prop
    return {"type": "object", "additionalProperties": False, "properties": properties}


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def markdown_table() -> str:
    """docs/operations.md's table of the server settings."""
    rows = ["| flag | environment | config file | default |", "|---|---|---|---|"]
    for f in FIELDS:
        m = f.metadata
        name = flag(f)
        flags = f"`{name}`, `--no-{name[2:]}`" if f.type is bool else f"`{name}`"
        default = f"`{_shown(f.default)}`"
        if f.name.endswith("Bytes") and f.default % MIB == 0:
            default += f" ({f.default // MIB} MiB)"
        text = m["help"]
        if m["choices"]:
            text += " (" + ", ".join(f"`{c}`" for c in m["choices"]) + ")"
        if m["doc"]:
            text += f" {m['doc']}" if m["doc"].startswith("(") else f"; {m['doc']}"
        rows.append(f"| {flags} | `{env_name(f)}` | `server.{f.name}` | {default}: {text} |")
    return "\n".join(rows) + "\n"
