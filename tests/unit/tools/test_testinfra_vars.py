# -*- coding: utf-8 -*-
"""The variables tests/testinfra reads for a host: role defaults and inventories/sim,
rendered with the rule book and the collection's filters (no host needed)."""

import importlib.util
import os

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
_spec = importlib.util.spec_from_file_location("testinfra_conftest", os.path.join(TOP, "tests", "testinfra", "conftest.py"))
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)

GROUP_VARS = os.path.join(TOP, "inventories", "sim", "group_vars")


@pytest.fixture
def groups():
    return conftest._groups_of_hosts_yml(os.path.join(TOP, "inventories", "sim", "hosts.yml"))


def test_groups_of_the_sim_inventory(groups):
    assert groups["sparks"] == ["spark-1", "spark-2"]
    assert groups["ray_head"] == ["spark-1"]
    assert groups["ray_workers"] == ["spark-2"]


def test_worker_vars_render_through_the_rule_book_and_filters(groups):
    worker = conftest.collection_vars("spark-2", groups, GROUP_VARS)
    assert worker.in_group("ray_workers") and not worker.in_group("ray_head")
    assert worker["nvidia_driver_packages"] == ["nvidia-driver-580-open",
                                                "libnvidia-compute-580", "nvidia-utils-580"]
    assert worker["qsfp_network_mtu"] == 9000
    # sparkfleet.gb10.fabric_address over the inventory's subnet and the host's index in groups['sparks'].
    assert worker["sparkfleet_fabric_address"] == "192.168.100.11"
    assert worker["sparkfleet_fabric_ifname"] == "enp1s0f1np1"
    assert worker.render(worker["sparkfleet_models"][0]["nodes"]) == ["spark-1", "spark-2"]


def test_inventory_overrides_role_defaults(groups):
    head = conftest.collection_vars("spark-1", groups, GROUP_VARS)
    # inventories/sim (vllm_cpu.yml) sets it; fleet_verify's default is the rule book's 512.
    assert head["fleet_verify_max_tokens"] == 16
    assert head["nvidia_driver_repository_name"] == "nvidia-local"


def test_a_host_outside_the_inventory_is_refused(groups):
    with pytest.raises(LookupError, match="spark-9 is in no group"):
        conftest.collection_vars("spark-9", groups, GROUP_VARS)


def test_an_unknown_variable_is_named():
    hostvars = conftest.HostVars("h", {}, {"all": ["h"]})
    with pytest.raises(KeyError, match="h: variable nope_missing"):
        hostvars["nope_missing"]
