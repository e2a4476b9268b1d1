# -*- coding: utf-8 -*-
"""Whole-inventory checks: each finding names host, variable, value and fix."""

from __future__ import annotations

import os

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp

ROLES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles")

SPECS = {
    "qsfp_network": {
        "qsfp_network_mtu": {"type": "int"},
        "qsfp_network_interfaces": {"type": "list", "elements": "str"},
        "qsfp_network_apply": {"type": "str", "choices": ["try", "apply"]},
    },
    "nccl": {"nccl_ldconfig": {"type": "bool"}},
}


def test_role_specs_load_from_the_roles_directory():
    specs = fp.load_role_specs(ROLES_DIR)
    assert "host_facts" in specs
    assert specs["host_facts"]["host_facts_refresh"]["type"] == "bool"


@pytest.mark.parametrize("name, value, words", [
    ("qsfp_network_mtu", "jumbo", "convert to int"),
    ("qsfp_network_interfaces", {"a": 1}, "list"),
    ("qsfp_network_apply", "yolo", "one of"),
    ("nccl_ldconfig", "maybe", "bool"),
])
def test_wrong_types_are_found_with_host_variable_value_and_fix(name, value, words):
    findings = fp.check_variable_types("spark-2", {name: value, "unrelated": 1}, SPECS)
    assert len(findings) == 1
    finding = findings[0]
    assert (finding.host, finding.variable, finding.value) == ("spark-2", name, value)
    assert words in finding.problem
    assert "argument_specs.yml" in finding.fix


def test_right_types_give_no_findings():
    host_vars = {"qsfp_network_mtu": "9000", "qsfp_network_interfaces": ["enp1s0f1np1"], "nccl_ldconfig": True}
    assert fp.check_variable_types("spark-1", host_vars, SPECS) == []


def test_misspelt_variable_is_named_with_the_likely_fix():
    findings = fp.check_unknown_variables("spark-1", {"qsfp_network_mut": 9000}, SPECS)
    assert [f.variable for f in findings] == ["qsfp_network_mut"]
    assert "did you mean qsfp_network_mtu" in findings[0].fix


def test_foreign_and_internal_variables_are_not_ours_to_judge():
    host_vars = {"ansible_host": "x", "my_own_var": 1, "_qsfp_network_tmp": 1, "nccl_ldconfig": False}
    assert fp.check_unknown_variables("spark-1", host_vars, SPECS) == []


def test_fleet_reports_every_finding_not_only_the_first():
    fleet = {
        "spark-1": {"qsfp_network_mtu": "x"},
        "spark-2": {"nccl_ldconfg": True, "qsfp_network_apply": "no"},
    }
    findings = fp.check_fleet(fleet, SPECS)
    assert sorted((f.host, f.variable) for f in findings) == [
        ("spark-1", "qsfp_network_mtu"),
        ("spark-2", "nccl_ldconfg"),
        ("spark-2", "qsfp_network_apply"),
    ]
    assert all(str(f).startswith(f.host + ": " + f.variable) for f in findings)
