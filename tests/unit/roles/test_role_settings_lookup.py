# -*- coding: utf-8 -*-
"""The lookup setting_problems, which each role asserts first, templates the role's variables as a play does and
says what preflight says of the same values: plugins/module_utils/role_settings.py is the function of both."""

import os

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan, role_settings
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp

INVENTORY = os.path.join(os.path.dirname(fleet_plan.ROLES_DIR), "inventories", "two-spark")

# One refused value per role (tests/unit/plugins/module_utils/test_role_settings.py has one per check).
BAD = {
    "qsfp_network": ({"qsfp_network_apply_method": "reboot"}, "qsfp_network_apply_method"),
    "fabric_firewall": ({"fabric_firewall_confirm_timeout": 115}, "fabric_firewall_confirm_timeout"),
    "fleet_health": ({"fleet_health_interval": "every five minutes"}, "fleet_health_interval"),
    "model_store": ({"model_store_dir": "models"}, "model_store_dir"),
    "memory_guard": ({"memory_guard_term_percent": 12}, "memory_guard_term_percent"),
    "nccl": ({"nccl_source": "archive"}, "nccl_archive"),
    "nvidia_driver": ({"nvidia_driver_branch": "590"}, "nvidia_driver_branch"),
    "vllm_venv": ({"vllm_venv_packages": ["vllm>=0.19"]}, "vllm_venv_packages"),
    "ray": ({"ray_head_dashboard_host": "0.0.0.0"}, "ray_head_dashboard_host"),
    "vllm_service": ({"vllm_service_hardening": {"PrivateDevices": "yes"}}, "vllm_service_hardening"),
    "fleet_verify": ({"fleet_verify_request_timeout": 0}, "fleet_verify_request_timeout"),
}


def test_every_role_with_settings_checks_is_tried():
    assert set(BAD) == set(role_settings.roles())


@pytest.mark.parametrize("role", sorted(BAD))
def test_the_lookup_says_what_preflight_says(role, render_role_vars):
    values, variable = BAD[role]
    seen = render_role_vars(INVENTORY, ["%s/defaults/main.yml" % role],
                            "lookup('sparkfleet.gb10.setting_problems', '%s', wantlist=True)" % role,
                            hosts="spark-1", extra_vars=values)
    findings = [f for f in fp.check_role_settings({"spark-1": dict(values)}) if f.variable == variable]
    assert len(findings) == 1
    assert seen["spark-1"] == [role_settings.message("spark-1", findings[0])]


def test_sound_settings_give_nothing(render_role_vars):
    """The roles' defaults, templated on a real inventory, pass every check."""
    roles = sorted(BAD)
    seen = render_role_vars(INVENTORY, ["%s/defaults/main.yml" % role for role in roles],
                            "lookup('sparkfleet.gb10.setting_problems', %s, wantlist=True)"
                            % ", ".join("'%s'" % role for role in roles), hosts="spark-1")
    assert seen["spark-1"] == []
