"""The chart's values schema checks `config` with the service's own config
schema (hack/chart-schema.py writes it): in sync, and as strict."""
import importlib.util
import json
import os

import jsonschema
import yaml

from tests.server.harness import REPO

spec = importlib.util.spec_from_file_location("chart_schema", os.path.join(REPO, "hack", "chart-schema.py"))
chart_schema = importlib.util.module_from_spec(spec)
spec.loader.exec_module(chart_schema)


def _load(path):
    with open(os.path.join(REPO, path)) as f:
        return json.load(f) if path.endswith(".json") else yaml.safe_load(f)


def test_values_schema_is_generated_from_the_config_schema():
    assert chart_schema.main(["--check"]) == 0


def test_a_typo_in_config_fails_the_values_schema_naming_its_path():
    values = _load("charts/workload-webhook/values.yaml")
    schema = _load("charts/workload-webhook/values.schema.json")
    jsonschema.validate(values, schema)                                    # the defaults pass
    values["config"]["pods"] = {"onMisingPodGroup": "x"}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(values))
    assert errors and any(list(e.absolute_path) == ["config", "pods"] and "onMisingPodGroup" in e.message
                          for e in errors)


def test_every_config_the_e2e_uses_is_valid_chart_config():
    schema = _load("charts/workload-webhook/values.schema.json")
    config = _load("tests/e2e/config.yaml")
    for decided in chart_schema.CHART_DECIDES:
        config.pop(decided, None)
    jsonschema.validate({"config": config, "global": {"imageRegistry": "x"}}, schema)
