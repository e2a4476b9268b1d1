# -*- coding: utf-8 -*-
"""fleet_verify's Ray gate and fleet_health's probe count the members of the head's own Ray cluster, from the
fleet plan: with two Ray clusters in one inventory, each head expects its pair, not all four Ray hosts."""

import json
import os
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
INVENTORY = os.path.join(REPO, "tests", "preflight", "valid", "two_ray_clusters")

PLAY = """
- hosts: ray_head
  connection: local
  gather_facts: false
  vars_files:
    - %(repo)s/roles/fleet_verify/defaults/main.yml
    - %(repo)s/roles/fleet_verify/vars/main.yml
    - %(repo)s/roles/fleet_health/defaults/main.yml
    - %(repo)s/roles/fleet_health/vars/main.yml
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Keep what each role reads of this head's cluster
      ansible.builtin.copy:
        content: >-
          {{ {'verify': _fleet_verify_ray_cluster, 'health': _fleet_health_config.ray} | to_json }}
        dest: "%(out)s/{{ inventory_hostname }}.json"
        mode: "0600"
      delegate_to: localhost
"""


def test_each_head_counts_its_own_clusters_members(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(PLAY % {"repo": REPO, "out": tmp_path})
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", INVENTORY, str(play)],
                          cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    expected = {"spark-1": (["spark-1", "spark-2"], "192.168.100.11"),
                "spark-3": (["spark-3", "spark-4"], "192.168.100.13")}
    for head, (members, address) in expected.items():
        seen = json.loads((tmp_path / (head + ".json")).read_text())
        assert seen["verify"]["members"] == members
        assert seen["verify"]["address"].startswith(address + ":")
        assert seen["health"]["expected_members"] == len(members)
        assert seen["health"]["address"] == seen["verify"]["address"]
