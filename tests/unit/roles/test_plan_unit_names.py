# -*- coding: utf-8 -*-
"""The units fleet_verify checks for the NCCL they loaded, and the Ray units fleet_health watches, are the ones the
fleet plan and the Ray roles name (an inventory's vllm_service_unit_prefix and ray_head_service_name included),
not a pattern of the default names: a renamed unit was not checked at all, and a host in no Ray group with no
model must check none (systemctl list-units with no pattern lists every service)."""

import json
import os
import shutil
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
INVENTORY = os.path.join(REPO, "tests", "preflight", "valid", "two_ray_clusters", "hosts.yml")

PLAY = """
- hosts: sparks
  connection: local
  gather_facts: false
  vars_files:
    - %(repo)s/roles/fleet_verify/defaults/main.yml
    - %(repo)s/roles/fleet_verify/vars/main.yml
    - %(repo)s/roles/fleet_health/defaults/main.yml
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Keep the units each role names for this host
      ansible.builtin.copy:
        content: >-
          {{ {'verify': fleet_verify_unit_globs or _fleet_verify_units,
              'health': [fleet_health_ray_head_unit, fleet_health_ray_worker_unit]} | to_json }}
        dest: "%(out)s/{{ inventory_hostname }}.json"
        mode: "0600"
      delegate_to: localhost
"""


def test_units_follow_the_plan_and_the_inventorys_names(tmp_path):
    inventory = tmp_path / "inventory"
    (inventory / "host_vars").mkdir(parents=True)
    shutil.copy(INVENTORY, inventory / "hosts.yml")
    (inventory / "host_vars" / "spark-1.yml").write_text(
        "vllm_service_unit_prefix: lab-vllm-\nray_head_service_name: lab-ray-head\n")
    # A host of the fleet in no Ray group and with no model of its own.
    (inventory / "spare.yml").write_text("sparks:\n  hosts:\n    spark-5: {sparkfleet_fabric_address: 192.168.100.15}\n")
    play = tmp_path / "play.yml"
    play.write_text(PLAY % {"repo": REPO, "out": tmp_path})
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", str(inventory), str(play)],
                          cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    seen = {h: json.loads((tmp_path / (h + ".json")).read_text()) for h in ("spark-1", "spark-2", "spark-3", "spark-4",
                                                                           "spark-5")}
    # Heads run the ray executor's vLLM unit; its followers (workers) run none, only their Ray unit.
    assert seen["spark-1"]["verify"] == ["lab-ray-head.service", "lab-vllm-llama-70b.service"]
    assert seen["spark-2"]["verify"] == ["sparkfleet-ray-worker.service"]
    assert seen["spark-3"]["verify"] == ["sparkfleet-ray-head.service", "sparkfleet-vllm-qwen3-235b.service"]
    assert seen["spark-4"]["verify"] == ["sparkfleet-ray-worker.service"]
    assert seen["spark-5"]["verify"] == []
    assert seen["spark-1"]["health"] == ["lab-ray-head", "sparkfleet-ray-worker"]
    assert seen["spark-3"]["health"] == ["sparkfleet-ray-head", "sparkfleet-ray-worker"]
