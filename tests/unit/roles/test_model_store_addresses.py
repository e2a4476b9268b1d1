# -*- coding: utf-8 -*-
"""roles/model_store/vars/main.yml reads each play host's fabric address from hostvars through the filter
model_store_addresses: on a real inventory, where a host's model_store_fabric_address templates to undefined, it
falls back to the host's sparkfleet_fabric_address (Ansible hands the filter its undefined marker, not an error)."""

import os
import shutil

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FILES = ["model_store/defaults/main.yml", "model_store/vars/main.yml"]


def test_the_play_hosts_addresses_in_inventory_order(render_role_vars, tmp_path):
    inventory = tmp_path / "inventory"
    (inventory / "host_vars").mkdir(parents=True)
    shutil.copy(os.path.join(REPO, "tests", "preflight", "valid", "two_ray_clusters", "hosts.yml"), str(inventory))
    (inventory / "host_vars" / "spark-2.yml").write_text('model_store_fabric_address: "{{ not_set_anywhere }}"\n')
    (inventory / "host_vars" / "spark-3.yml").write_text("model_store_fabric_address: 192.168.200.13\n")
    rendered = render_role_vars(str(inventory), FILES, "_model_store_addresses")
    expected = {"spark-1": "192.168.100.11", "spark-2": "192.168.100.12", "spark-3": "192.168.200.13",
                "spark-4": "192.168.100.14"}
    for host in expected:
        assert rendered[host] == expected
        assert list(rendered[host]) == sorted(expected)
