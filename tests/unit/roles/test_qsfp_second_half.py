# -*- coding: utf-8 -*-
"""sparkfleet.gb10.qsfp_network's default interfaces are both halves of the cabled QSFP port: the second is the
other PCIe link's netdev with the same s0fNnpN suffix as sparkfleet_fabric_ifname (seed 004 cables port 0,
enp1s0f0np0, whose second half is enP2p1s0f0np0, not port 1's enP2p1s0f1np1). Rendered by ansible-playbook from
the role's real defaults file."""

import json
import os

import pytest

from ansible_local import REPO, local_playbook  # tests/unit/ansible_local.py

PLAY = """
- name: Default interfaces
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Load the role's defaults
      ansible.builtin.include_vars:
        file: %s
    - name: Write the names they give
      ansible.builtin.copy:
        content: "{{ qsfp_network_interfaces | map(attribute='name') | list | to_json }}"
        dest: %s
        mode: "0644"
"""


@pytest.mark.parametrize("ifname, halves", [
    (None, ["enp1s0f1np1", "enP2p1s0f1np1"]),
    ("enp1s0f1np1", ["enp1s0f1np1", "enP2p1s0f1np1"]),
    ("enp1s0f0np0", ["enp1s0f0np0", "enP2p1s0f0np0"]),
    ("enP2p1s0f0np0", ["enP2p1s0f0np0", "enp1s0f0np0"]),
])
def test_the_second_half_is_of_the_same_port(tmp_path, ifname, halves):
    out = tmp_path / "names.json"
    defaults = os.path.join(REPO, "roles", "qsfp_network", "defaults", "main.yml")
    proc = local_playbook(tmp_path, PLAY % (defaults, out),
                          extra_vars={"sparkfleet_fabric_ifname": ifname} if ifname else None)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(out.read_text()) == halves
