# -*- coding: utf-8 -*-
"""Every role's defaults and argument_specs stay in sync: every default is an option of the main entry point and every
option a default, each variable carries the role's prefix, and an option's default is the role's own value, of the
option's type. A default that is itself a template (a string holding a Jinja expression, whatever the option's type:
its value and type are known only once templated) is described, not repeated: the option has no default, and its
description says where the value comes from. A list or mapping whose items hold templates is of the option's type and
is repeated exactly, templates included.

The fleet-wide sparkfleet_* inventory settings have no defaults (each role reads them with its own fallback, which is
that role's templated default); they are documented once, in the ``fleet`` entry point of sparkfleet.gb10.preflight,
whose defaults/main.yml sets nothing."""

import os

import pytest
import yaml

ROLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles"))
# Every role whose defaults/main.yml sets a variable (test_every_role_with_defaults_is_checked keeps it so).
SYNCED = ["fabric_firewall", "fleet_benchmark", "fleet_health", "fleet_verify", "host_facts", "memory_guard",
          "model_store", "nccl", "nvidia_driver", "os_update", "qsfp_network", "ray", "vllm_service", "vllm_venv"]
# The Python types a literal default of each argument_specs type may have (YAML reads 1 as an int, which a float takes).
TYPES = {"str": (str,), "path": (str,), "int": (int,), "float": (float, int), "bool": (bool,), "list": (list,),
         "dict": (dict,)}
FLEET_PREFIX = "sparkfleet_"


def _load(role, path):
    with open(os.path.join(ROLES, role, path)) as handle:
        return yaml.safe_load(handle)


def _templated(value):
    """Whether ``value`` is itself a template: a string holding a Jinja expression or statement."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _of_type(value, kind):
    """Whether a literal default is of the argument_specs type ``kind`` (a bool is no number)."""
    if isinstance(value, bool) and kind in ("int", "float"):
        return False
    return isinstance(value, TYPES[kind])


def test_every_role_with_defaults_is_checked():
    with_defaults = sorted(role for role in os.listdir(ROLES)
                           if os.path.isfile(os.path.join(ROLES, role, "defaults", "main.yml"))
                           and _load(role, "defaults/main.yml"))
    assert with_defaults == sorted(SYNCED)


@pytest.mark.parametrize("role", SYNCED)
def test_defaults_and_argument_specs_agree(role):
    defaults = _load(role, "defaults/main.yml")
    options = _load(role, "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    assert all(name.startswith(role + "_") for name in defaults)
    for name, spec in options.items():
        value = defaults[name]
        assert spec.get("description"), name
        if _templated(value):
            assert "default" not in spec, name  # a templated default is described, not repeated
            continue
        assert spec.get("default") == value, name
        kind = spec.get("type", "str")
        if value is not None:
            assert _of_type(value, kind), (name, kind, value)
            if kind == "list" and spec.get("elements") in TYPES:
                assert all(_of_type(item, spec["elements"]) for item in value), (name, spec["elements"], value)


def test_fleet_wide_settings_are_documented_once_without_defaults():
    assert not _load("preflight", "defaults/main.yml")
    fleet = _load("preflight", "meta/argument_specs.yml")["argument_specs"]["fleet"]["options"]
    assert fleet and all(name.startswith(FLEET_PREFIX) for name in fleet)
    assert not [name for name, spec in fleet.items() if "default" in spec]
    elsewhere = []
    for role in sorted(os.listdir(ROLES)):
        path = os.path.join(ROLES, role, "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            continue
        for entry, spec in (_load(role, "meta/argument_specs.yml")["argument_specs"] or {}).items():
            if (role, entry) == ("preflight", "fleet"):
                continue
            elsewhere += ["%s.%s: %s" % (role, entry, name) for name in (spec or {}).get("options") or {}
                          if name.startswith(FLEET_PREFIX)]
    assert elsewhere == []
