# -*- coding: utf-8 -*-
"""Roles whose defaults and argument_specs stay in sync: every default is an option and every option a default,
each variable carries the role's prefix, and an option's default is the role's own value (a templated default is
described, not repeated)."""

import os

import pytest
import yaml

ROLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles"))
# The roles held to it. The others describe some defaults differently from defaults/main.yml (a resolved list, a
# rule-book value written out); they are not checked here.
SYNCED = ["fabric_firewall", "fleet_benchmark", "fleet_health", "host_facts", "memory_guard", "os_update"]


def _load(role, path):
    with open(os.path.join(ROLES, role, path)) as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("role", SYNCED)
def test_defaults_and_argument_specs_agree(role):
    defaults = _load(role, "defaults/main.yml")
    options = _load(role, "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    assert all(name.startswith(role + "_") for name in defaults)
    for name, spec in options.items():
        value = defaults[name]
        if isinstance(value, str) and "{{" in value:
            assert "default" not in spec, name  # a templated default is described, not repeated
        else:
            assert spec.get("default") == value, name
