# -*- coding: utf-8 -*-
"""The units fleet_verify checks for the NCCL they loaded, and the Ray units fleet_health watches, are the ones the
fleet plan and the ray role name (an inventory's vllm_service_unit_prefix and ray_head_service_name included),
not a pattern of the default names: a renamed unit was not checked at all, and a host in no Ray group with no
model must check none (systemctl list-units with no pattern lists every service)."""

import os
import shutil

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
INVENTORY = os.path.join(REPO, "tests", "preflight", "valid", "two_ray_clusters", "hosts.yml")
FILES = ["fleet_verify/defaults/main.yml", "fleet_verify/vars/main.yml", "fleet_health/defaults/main.yml"]
WHAT = ("{'verify': fleet_verify_unit_globs or _fleet_verify_units, "
        "'health': [fleet_health_ray_head_unit, fleet_health_ray_worker_unit]}")


def test_units_follow_the_plan_and_the_inventorys_names(tmp_path, render_role_vars):
    inventory = tmp_path / "inventory"
    (inventory / "host_vars").mkdir(parents=True)
    shutil.copy(INVENTORY, inventory / "hosts.yml")
    (inventory / "host_vars" / "spark-1.yml").write_text(
        "vllm_service_unit_prefix: lab-vllm-\nray_head_service_name: lab-ray-head\n")
    # A host of the fleet in no Ray group and with no model of its own.
    (inventory / "spare.yml").write_text("sparks:\n  hosts:\n    spark-5: {sparkfleet_fabric_address: 192.168.100.15}\n")
    seen = render_role_vars(inventory, FILES, WHAT)
    # Heads run the ray executor's vLLM unit; its followers (workers) run none, only their Ray unit.
    assert seen["spark-1"]["verify"] == ["lab-ray-head.service", "lab-vllm-llama-70b.service"]
    assert seen["spark-2"]["verify"] == ["sparkfleet-ray-worker.service"]
    assert seen["spark-3"]["verify"] == ["sparkfleet-ray-head.service", "sparkfleet-vllm-qwen3-235b.service"]
    assert seen["spark-4"]["verify"] == ["sparkfleet-ray-worker.service"]
    assert seen["spark-5"]["verify"] == []
    assert seen["spark-1"]["health"] == ["lab-ray-head", "sparkfleet-ray-worker"]
    assert seen["spark-3"]["health"] == ["sparkfleet-ray-head", "sparkfleet-ray-worker"]
