"""The chart's `server` values reach the service's config as given, as the real helm
renders them: every setting the chart offers (values.schema.json's server section is
written from the settings' fields, webhook/server_settings.py), and a setting the
template has never heard of, so a new field needs no template edit."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import yaml

from tests.e2e.test_chart_templates import CHART, RELEASE
from tests.unit.test_server_settings import _another
from webhook import config, server_settings


def _server(bin_dir, tmp_path, values: dict | None = None, chart: str = CHART) -> dict:
    """config.server of the config file the chart writes."""
    path = tmp_path / f"values-{len(os.listdir(tmp_path))}.yaml"
    path.write_text(yaml.safe_dump(values or {}))
    proc = subprocess.run([os.path.join(bin_dir, "helm"), "template", RELEASE, chart, "-f", str(path),
                           "--show-only", "templates/configmap.yaml"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    configmap = next(d for d in yaml.safe_load_all(proc.stdout) if d and d["kind"] == "ConfigMap"
                     and "config.yaml" in d["data"])
    return yaml.safe_load(configmap["data"]["config.yaml"])["server"]


def test_every_server_value_reaches_the_config_and_the_service_reads_it(bin_dir, tmp_path):
    offered = [f for f in server_settings.FIELDS if f.metadata["chart"] is not None]
    given = {f.name: _another(f) for f in offered}
    given["metricsPort"] = 9091
    given["bodyBudgetBytes"] = 4 * 1024 ** 3         # beyond int32: still a whole number
    given["lookupTimeoutSeconds"] = 0.5              # a fraction stays one
    rendered = _server(bin_dir, tmp_path, {"server": given})
    assert {k: rendered[k] for k in given} == given
    assert (rendered["bindAddress"], rendered["cluster"]) == ("0.0.0.0", "auto")     # the chart's own
    settings = config.from_dict({"server": rendered}).server
    assert {k: getattr(settings, k) for k in given} == given
    with open(os.path.join(CHART, "values.yaml")) as f:
        defaults = yaml.safe_load(f)["server"]
    rendered = _server(bin_dir, tmp_path)
    assert {k: rendered[k] for k in defaults} == defaults
    assert all(type(rendered[k]) is type(v) for k, v in defaults.items()), rendered   # 7340032, not 7.340032e+06


def test_a_setting_the_template_does_not_name_is_passed_through(bin_dir, tmp_path):
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    schema_path = chart / "values.schema.json"
    schema = json.loads(schema_path.read_text())
    schema["properties"]["server"]["properties"]["aFutureSetting"] = {"type": "integer"}
    schema_path.write_text(json.dumps(schema))
    values = tmp_path / "values"
    values.mkdir()
    assert _server(bin_dir, values, {"server": {"aFutureSetting": 7}}, chart=str(chart))["aFutureSetting"] == 7
