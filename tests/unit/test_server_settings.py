"""A server setting is one field of ServerSettings (webhook/server_settings.py):
its flag, its WW_* variable, the `server` sections of the config schema and of
the chart's values schema, and the table of docs/operations.md all follow from
it. These tests read each of them and compare them with the fields."""
import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from webhook import config, server_settings
from webhook.commands import serve as serve_command
from webhook.certificates import files
from webhook.certificates.serving import ServingCertificates
from webhook.cli import build_parser
from webhook.server.gunicorn_app import Launch, WebhookServer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIELDS = server_settings.FIELDS
CHART = os.path.join(REPO, "charts", "workload-webhook")


def _json(*path: str) -> dict:
    with open(os.path.join(REPO, *path)) as f:
        return json.load(f)


def _agrees(f: dataclasses.Field, prop: dict) -> None:
    m = f.metadata
    if m["choices"]:
        assert prop["enum"] == list(m["choices"]), f.name
    else:
        assert prop["type"] == {int: "integer", float: "number", str: "string", bool: "boolean"}[f.type], f.name
    assert prop["description"], f.name


def test_the_config_schema_has_each_field_with_its_type_bounds_and_default():
    props = _json("schemas", "config.schema.json")["properties"]["server"]["properties"]
    assert list(props) == [f.name for f in FIELDS]
    for f in FIELDS:
        _agrees(f, props[f.name])
        assert props[f.name]["default"] == f.default, f.name
        for bound, value in f.metadata["bounds"].items():
            assert props[f.name][bound] == value, (f.name, bound)
    # and the loader refuses what the bounds refuse
    with pytest.raises(config.ConfigError):
        config.from_dict({"server": {"workers": 0}})


def test_the_chart_values_schema_has_each_field_the_chart_offers():
    schema = _json("charts", "workload-webhook", "values.schema.json")["properties"]["server"]
    offered = [f for f in FIELDS if f.metadata["chart"] is not None]
    assert list(schema["properties"]) == [f.name for f in offered]
    assert {f.name for f in FIELDS} - set(schema["properties"]) == {"bindAddress", "certDir", "cluster"}
    for f in offered:
        _agrees(f, schema["properties"][f.name])
    with open(os.path.join(CHART, "values.yaml")) as fh:
        values = yaml.safe_load(fh)["server"]
    assert set(values) <= set(schema["properties"])
    assert schema["additionalProperties"] is False


def _operations_rows() -> dict[str, list[str]]:
    with open(os.path.join(REPO, "docs", "operations.md")) as f:
        text = f.read()
    table = text.split("<!-- server settings:", 1)[1].split("<!-- end of the server settings -->", 1)[0]
    rows = {}
    for line in table.splitlines()[3:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[re.fullmatch(r"`server\.(\w+)`", cells[2]).group(1)] = cells
    return rows


def test_the_operations_table_has_each_field_with_its_flag_variable_and_default():
    rows = _operations_rows()
    assert list(rows) == [f.name for f in FIELDS]
    for f in FIELDS:
        flags, env, _, default = rows[f.name]
        assert flags.split(",")[0] == f"`{server_settings.flag(f)}`"
        assert env == f"`{server_settings.env_name(f)}`"
        shown = str(f.default).lower() if isinstance(f.default, bool) else f"{f.default:g}" \
            if isinstance(f.default, float) else str(f.default)
        assert default.startswith(f"`{shown}`"), (f.name, default)
        assert f.metadata["help"] in default


def test_the_written_files_are_up_to_date():
    proc = subprocess.run([sys.executable, "hack/server-settings.py", "--check"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def _another(f: dataclasses.Field):
    """A valid value other than the default."""
    if f.metadata["choices"]:
        return next(c for c in f.metadata["choices"] if c != f.default)
    if f.type is bool:
        return not f.default
    if f.type is str:
        return "elsewhere"
    return f.default + 1


@pytest.mark.parametrize("f", FIELDS, ids=[f.name for f in FIELDS])
def test_each_setting_is_given_by_its_flag_over_its_variable_over_the_file(f):
    value = _another(f)
    raw = str(value).lower() if isinstance(value, bool) else str(value)
    flag = server_settings.flag(f)
    args = [flag if value else f"--no-{flag[2:]}"] if f.type is bool else [flag, raw]
    cfg = config.Config()
    by_flag = serve_command.server_settings(cfg, build_parser().parse_args(["serve", *args]), environ={})
    by_env = serve_command.server_settings(cfg, build_parser().parse_args(["serve"]),
                                           environ={server_settings.env_name(f): raw})
    assert getattr(by_flag, f.name) == value and getattr(by_env, f.name) == value
    in_file = config.from_dict({"server": {f.name: value}})
    assert getattr(serve_command.server_settings(in_file, build_parser().parse_args(["serve"]), environ={}),
                   f.name) == value
    flag_wins = serve_command.server_settings(in_file, build_parser().parse_args(["serve", *args]),
                                              environ={server_settings.env_name(f): str(f.default)})
    assert getattr(flag_wins, f.name) == value


def test_a_variable_of_the_wrong_type_is_one_line_naming_it():
    with pytest.raises(config.ConfigError) as err:
        serve_command.server_settings(config.Config(), build_parser().parse_args(["serve"]),
                                      environ={"WW_METRICS_TLS": "maybe"})
    assert err.value.problems == ["WW_METRICS_TLS: not a valid bool: 'maybe'"]


def test_gunicorn_is_given_only_options_it_reads(tmp_path):
    """keep-alive, the request-line and header limits and the connection cap are the
    worker's own (it reads the settings); gunicorn's copies of them would be read by nothing."""
    settings = dataclasses.replace(config.ServerSettings(), cluster="disabled", idleTimeoutSeconds=77,
                                   maxConnections=333, workers=3, gracefulTimeoutSeconds=9)
    launch = Launch(config.Config(server=settings), ServingCertificates(files.Paths.in_dir(str(tmp_path))))
    cfg = WebhookServer(launch).cfg
    defaults = {name: setting.default for name, setting in cfg.settings.items()}
    for unread in ("keepalive", "limit_request_line", "limit_request_fields", "worker_connections"):
        assert cfg.settings[unread].get() == defaults[unread], unread
    assert (cfg.workers, cfg.graceful_timeout) == (3, 9)     # read by gunicorn's arbiter


def test_the_master_lets_go_of_its_list_once_the_workers_it_lacked_are_forked(tmp_path):
    """The master's one LIST (webhook/cluster/snapshot.py) is dropped when gunicorn's
    arbiter returns from forking, not after a guessed sleep. Every worker is there
    already, so nothing forks here."""
    from webhook.server.gunicorn_app import _Master
    settings = dataclasses.replace(config.ServerSettings(), cluster="disabled", workers=2)
    app = WebhookServer(Launch(config.Config(server=settings), ServingCertificates(files.Paths.in_dir(str(tmp_path)))))
    master = _Master(app)
    master.num_workers = 2
    master.WORKERS = {1: object(), 2: object()}
    app.snapshot = {"podgroups": ("v1beta1", "7", {})}
    master.spawn_workers()
    assert app.snapshot is None
