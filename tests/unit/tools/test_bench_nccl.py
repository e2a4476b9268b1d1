# -*- coding: utf-8 -*-
"""tools/bench_nccl.py: the bench fleet's inventory reaches its hosts as inventories/sim does."""

import json
import os
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import bench_nccl  # noqa: E402
import bench_scale  # noqa: E402


@pytest.mark.parametrize("connection", ["ssh", "docker"])
def test_inventory_reaches_the_hosts_as_inventories_sim_does(tmp_path, connection):
    path = bench_nccl.inventory(str(tmp_path), 4, connection)
    with open(path) as handle:
        sparks = json.load(handle)["sparks"]
    assert sparks["hosts"] == dict(("nccl-bench-%d" % i, {"sparkfleet_fabric_address": "192.168.79.%d" % (10 + i)})
                                   for i in range(1, 5))
    assert sparks["vars"] == bench_scale.connection_vars(connection)
    assert os.path.samefile(str(tmp_path / "group_vars"), os.path.join(REPO, "tests", "sim", "group_vars"))


def test_ssh_is_the_default(tmp_path):
    with open(bench_nccl.inventory(str(tmp_path), 1)) as handle:
        assert json.load(handle)["sparks"]["vars"]["ansible_connection"] == "ansible.builtin.ssh"
