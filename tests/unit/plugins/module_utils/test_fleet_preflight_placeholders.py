# -*- coding: utf-8 -*-
"""Placeholders that pass as values and fail only later (fleet_preflight.check_placeholders): a revision of one digit
repeated, a documentation address where a run connects; and the example inventories as a user copies them, which
preflight refuses before anything changes instead of failing at the models stage."""

from __future__ import annotations

import os

import pytest

from ansible_collections.sparkfleet.gb10.plugins.action.fleet_preflight import fleet_checks
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp

from inventory_loader import load_fleet

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"


def _entry(revision, repo="Qwen/Qwen3-8B"):
    return {"name": "m", "model": repo, "source": {"type": "hf", "repo": repo, "revision": revision}}


def _fleet(revision=COMMIT, **host_vars):
    return {"spark-1": dict({"sparkfleet_models": [_entry(revision)]}, **host_vars)}


@pytest.mark.parametrize("revision", ["0" * 40, "f" * 40, "7" * 40, " " + "0" * 40 + " "])
def test_a_revision_of_one_digit_repeated_is_refused_with_its_fix(revision):
    found = fp.check_placeholders(_fleet(revision))
    assert [(f.host, f.variable, f.value) for f in found] == [("spark-1", "sparkfleet_models[0] (m).source.revision",
                                                               revision)]
    assert "no commit of Qwen/Qwen3-8B" in found[0].problem and "models stage" in found[0].problem
    assert "write the commit you reviewed" in found[0].fix and "'Qwen/Qwen3-8B'" in found[0].fix


@pytest.mark.parametrize("revision", [COMMIT, "0" * 39 + "1",
                                      # refused elsewhere, once: a branch (not pinned), upper case, empty (the entry)
                                      "main", "A" * 40, "", "0" * 41])
def test_other_revisions_are_not_this_checks(revision):
    assert fp.check_placeholders(_fleet(revision)) == []


def test_only_an_hf_source_has_a_revision_to_judge():
    dir_source = {"type": "dir", "path": "/m", "revision": "0" * 40}
    fleet = {"spark-1": {"sparkfleet_models": [{"name": "d", "model": "/m", "source": dir_source},
                                               {"name": "plain", "model": "org/x"}, "not an entry"]}}
    assert fp.check_placeholders(fleet) == []


@pytest.mark.parametrize("address", ["192.0.2.11", "198.51.100.7", "203.0.113.200", "2001:db8::11"])
@pytest.mark.parametrize("connection", [None, "ssh", "ansible.builtin.ssh", "paramiko"])
def test_a_documentation_address_is_refused_where_a_run_connects(address, connection):
    host_vars = {"ansible_host": address}
    if connection:
        host_vars["ansible_connection"] = connection
    found = fp.check_placeholders(_fleet(**host_vars))
    assert [(f.host, f.variable, f.value) for f in found] == [("spark-1", "ansible_host", address)]
    assert "documentation address" in found[0].problem and "management address" in found[0].fix


def test_the_inventory_name_is_the_address_without_ansible_host():
    found = fp.check_placeholders({"192.0.2.5": {"sparkfleet_models": []}})
    assert [(f.host, f.variable, f.value) for f in found] == [("192.0.2.5", "ansible_host", "192.0.2.5")]


@pytest.mark.parametrize("host_vars", [
    {"ansible_host": "192.0.2.11", "ansible_connection": "local"},   # tests/preflight/offline.yml: nothing connects
    {"ansible_host": "192.0.2.11", "ansible_connection": "ansible.builtin.local"},
    {"ansible_host": "192.168.1.11"}, {"ansible_host": "10.0.0.5"}, {"ansible_host": "spark-1.lan"},
    {"ansible_host": "192.0.3.1"}, {},
])
def test_an_address_a_run_can_reach_passes(host_vars):
    assert fp.check_placeholders(_fleet(**host_vars)) == []


# ------------------------------------------------------------------ the example inventories as shipped
NAMES = fleet_plan.PLAN_INPUTS + ("ansible_host", "ansible_connection", "sparkfleet_fabric_subnet",
                                  "sparkfleet_fabric_subnet_second_half", "sparkfleet_allow_socket_fallback",
                                  "sparkfleet_fabric_ifname")
EXAMPLES = ("two-spark", "three-spark", "dual-independent", "single-spark")
REVISIONS = {"two-spark": "qwen3_235b_revision", "three-spark": "llama_405b_revision"}


@pytest.mark.parametrize("name", EXAMPLES)
def test_an_example_as_a_user_copies_it_is_refused_before_anything_changes(name):
    """Every host of every example: its documentation address, and the revision it asks for, until the user writes
    them. Nothing else, and nothing once they are written (tests/preflight/example_inputs.yml and a real address)."""
    fleet = load_fleet(os.path.join(TOP, "inventories", name), NAMES)
    _plan, findings = fp.judge_fleet(fleet, fp.load_role_specs(os.path.join(TOP, "roles")),
                                     fleet_checks(os.path.join(TOP, "roles")))
    found = sorted((f.host, f.variable.split(" ")[-1].split(".")[-1], f.value) for f in findings)
    expected = [(host, "ansible_host", fleet[host]["ansible_host"]) for host in fleet]
    if name in REVISIONS:
        expected += [(host, "revision", "") for host in fleet]  # empty: the entry check's finding
    assert found == sorted(expected)
    assert all(f.value.startswith("192.0.2.") for f in findings if f.variable == "ansible_host")

    written = load_fleet(os.path.join(TOP, "inventories", name), NAMES,
                         [os.path.join(TOP, "tests", "preflight", "example_inputs.yml")])
    for host_vars in written.values():
        host_vars["ansible_host"] = host_vars["ansible_host"].replace("192.0.2.", "10.20.30.")
    _plan, findings = fp.judge_fleet(written, fp.load_role_specs(os.path.join(TOP, "roles")),
                                     fleet_checks(os.path.join(TOP, "roles")))
    assert findings == []
