# -*- coding: utf-8 -*-
"""The lookup role_vars hands a role's settings to a filter in one mapping: every option of the role
(meta/argument_specs.yml), templated as the play sees it, keyed without the role's prefix
(plugins/module_utils/role_vars.py)."""

import os

import pytest
import yaml
from ansible.errors import AnsibleError

from ansible_collections.sparkfleet.gb10.plugins.lookup.role_vars import LookupModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils import role_vars
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
INVENTORY = os.path.join(REPO, "inventories", "two-spark")


def _options(role):
    with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")) as handle:
        return yaml.safe_load(handle)["argument_specs"]["main"]["options"]


def test_the_options_are_the_roles_argument_specs():
    assert role_vars.options("memory_guard") == tuple(sorted(_options("memory_guard")))
    assert role_vars.short_name("fleet_health", "fleet_health_timeout") == "timeout"


def test_a_role_without_options_is_refused_naming_those_with_some():
    with pytest.raises(AnsibleError, match="role 'nope' has no options .*fleet_health"):
        LookupModule().run(["nope"])


def test_each_option_templated_as_the_play_sees_it(render_role_vars):
    seen = render_role_vars(INVENTORY, ["fleet_health/defaults/main.yml", "memory_guard/defaults/main.yml"],
                            "lookup('sparkfleet.gb10.role_vars', 'fleet_health', 'memory_guard', wantlist=True)",
                            hosts="spark-1", extra_vars={"fleet_health_timeout": "30", "memory_guard_extra_args": ["-g"]})
    health, guard = seen["spark-1"]
    assert sorted(health) == sorted(name[len("fleet_health_"):] for name in _options("fleet_health"))
    assert sorted(guard) == sorted(name[len("memory_guard_"):] for name in _options("memory_guard"))
    # -e wins; a default that is a lookup is its answer; a literal default as written
    assert health["timeout"] == "30" and guard["extra_args"] == ["-g"]
    assert health["vllm_secrets_dir"] == fleet_default("vllm_secrets_dir") and health["fabric_group"] == "sparks"
    assert guard["report_interval"] == 3600 and "{{" not in guard["prefer"]


def test_an_option_the_play_does_not_define_is_left_out(render_role_vars):
    seen = render_role_vars(INVENTORY, ["memory_guard/defaults/main.yml"],
                            "lookup('sparkfleet.gb10.role_vars', 'fleet_benchmark')", hosts="spark-1",
                            extra_vars={"fleet_benchmark_seed": 7})
    assert seen["spark-1"] == {"seed": 7}


@pytest.mark.parametrize("value, expected", [(60, 60), ("30", 30), (2.9, 2), ("2.5", 2), ("x", 0), (None, 0)])
def test_a_number_is_read_as_jinjas_int_reads_it(value, expected):
    assert role_vars.integer(value) == expected


@pytest.mark.parametrize("value, expected", [(True, True), ("yes", True), (1, True), ("true", True),
                                             (False, False), ("no", False), (0, False), ("off", False)])
def test_a_switch_is_read_as_ansibles_bool_reads_it(value, expected):
    assert role_vars.on(value) is expected
