# -*- coding: utf-8 -*-
"""sparkfleet.gb10.fleet_health: defaults and argument_specs stay in sync."""

import os

import yaml

ROLE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "fleet_health"))


def _load(path):
    with open(os.path.join(ROLE, path)) as handle:
        return yaml.safe_load(handle)


def test_defaults_and_argument_specs_agree():
    defaults = _load("defaults/main.yml")
    options = _load("meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    assert all(name.startswith("fleet_health_") for name in defaults)
    for name, spec in options.items():
        value = defaults[name]
        if isinstance(value, str) and "{{" in value:
            assert "default" not in spec, name  # a templated default is described, not repeated
        else:
            assert spec.get("default") == value, name
