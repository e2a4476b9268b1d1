# -*- coding: utf-8 -*-
"""fleet_verify's Ray gate and fleet_health's probe count the members of the head's own Ray cluster, from the
fleet plan: with two Ray clusters in one inventory, each head expects its pair, not all four Ray hosts; and a
worker (ray_worker) and the ray executor (vllm_service) find their head there when the inventory names none."""

import json
import os
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
INVENTORY = os.path.join(REPO, "tests", "preflight", "valid", "two_ray_clusters")

PLAY = """
- hosts: sparks
  connection: local
  gather_facts: false
  vars_files:
    - %(repo)s/roles/fleet_verify/defaults/main.yml
    - %(repo)s/roles/fleet_verify/vars/main.yml
    - %(repo)s/roles/fleet_health/defaults/main.yml
    - %(repo)s/roles/fleet_health/vars/main.yml
    - %(repo)s/roles/ray_worker/defaults/main.yml
    - %(repo)s/roles/vllm_service/defaults/main.yml
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Keep what each role reads of this host's cluster
      ansible.builtin.copy:
        content: >-
          {{ {'verify': _fleet_verify_ray_cluster, 'health': _fleet_health_config.ray,
              'worker_head': ray_worker_head_host, 'ray_address': vllm_service_ray_address} | to_json }}
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
        # The inventory names no head (sparkfleet_ray_head_host): each worker joins, and each member's ray
        # executor connects to, the head of its own cluster, found in the plan.
        for member in members:
            seen = json.loads((tmp_path / (member + ".json")).read_text())
            assert seen["worker_head"] == head
            assert seen["verify"]["members"] == members
            assert seen["ray_address"] == seen["verify"]["address"]
            assert seen["ray_address"].startswith(address + ":")
