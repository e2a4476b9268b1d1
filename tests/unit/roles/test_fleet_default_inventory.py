# -*- coding: utf-8 -*-
"""The sparkfleet.gb10.fleet_default lookup applies "the inventory's variable, else the default" itself, so a
reader writes the lookup alone: an inventory value reaches writer and readers alike, an empty one counts as
unset, and a role default that defers to the lookup (ray_head_service_name in the ray role's defaults) is passed
over instead of templated again (which would never end)."""

FILES = ["ray/defaults/main.yml", "vllm_service/defaults/main.yml",
         "fleet_health/defaults/main.yml", "fleet_verify/defaults/main.yml"]
WHAT = ("{'head_unit': ray_head_service_name, 'worker_unit': ray_worker_service_name,"
        " 'health_units': [fleet_health_ray_head_unit, fleet_health_ray_worker_unit],"
        " 'venvs': [ray_venv_path, vllm_service_venv_path, fleet_health_venv_path, fleet_verify_venv_path],"
        " 'user': [ray_user, vllm_service_user],"
        " 'ifname': [ray_fabric_ifname, vllm_service_fabric_ifname, fleet_health_fabric_ifname]}")

INVENTORY = """
sparks:
  hosts:
    plain: {}
    lab:
      ray_head_service_name: lab-ray-head
      ray_worker_service_name: "{{ 'lab-ray-' ~ 'worker' }}"
      sparkfleet_venv_path: /srv/venv
      sparkfleet_service_user: labsvc
      sparkfleet_fabric_ifname: enP2p1s0f1np1
    blank:
      sparkfleet_venv_path: ""
      sparkfleet_fabric_ifname: "  "
"""


def test_inventory_value_first_for_writer_and_readers(tmp_path, render_role_vars):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY)
    # The harness loads role defaults as vars files, above the inventory: the ray role's own unit names resolve
    # through the lookup (the guard), and the readers' through the inventory.
    seen = render_role_vars(inventory, FILES, WHAT)
    assert seen["plain"] == {
        "head_unit": "sparkfleet-ray-head", "worker_unit": "sparkfleet-ray-worker",
        "health_units": ["sparkfleet-ray-head", "sparkfleet-ray-worker"],
        "venvs": ["/opt/sparkfleet/venv"] * 4, "user": ["sparkfleet"] * 2, "ifname": ["enp1s0f1np1"] * 3}
    assert {k: v for k, v in seen["lab"].items() if not k.endswith("unit") and k != "health_units"} == {
        "venvs": ["/srv/venv"] * 4, "user": ["labsvc"] * 2, "ifname": ["enP2p1s0f1np1"] * 3}
    # An empty inventory value is unset, as `default(..., true)` had it.
    assert seen["blank"]["venvs"] == ["/opt/sparkfleet/venv"] * 4
    assert seen["blank"]["ifname"] == ["enp1s0f1np1"] * 3
    # Without the ray role's defaults above it, the inventory's unit names reach the readers (templated).
    units = render_role_vars(inventory, ["fleet_health/defaults/main.yml"],
                             "[fleet_health_ray_head_unit, fleet_health_ray_worker_unit]")
    assert units["lab"] == ["lab-ray-head", "lab-ray-worker"]
    assert units["plain"] == units["blank"] == ["sparkfleet-ray-head", "sparkfleet-ray-worker"]
