# -*- coding: utf-8 -*-
"""fleet_verify's Ray gate and fleet_health's probe count the members of the head's own Ray cluster, from the
fleet plan: with two Ray clusters in one inventory, each head expects its pair, not all four Ray hosts; and a
worker (the ray role) and the ray executor (vllm_service) find their head there when the inventory names none."""

import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
INVENTORY = os.path.join(REPO, "tests", "preflight", "valid", "two_ray_clusters")
FILES = ["fleet_verify/defaults/main.yml", "fleet_verify/vars/main.yml", "fleet_health/defaults/main.yml",
         "fleet_health/vars/main.yml", "ray/defaults/main.yml", "ray/vars/main.yml",
         "vllm_service/defaults/main.yml", "vllm_service/vars/main.yml"]
WHAT = ("{'verify': _fleet_verify_ray_cluster, 'health': _fleet_health_config.ray, "
        "'worker_head': ray_worker_head_host, 'kind': _ray_kind, 'ray_address': vllm_service_ray_address}")


def test_each_head_counts_its_own_clusters_members(render_role_vars):
    rendered = render_role_vars(INVENTORY, FILES, WHAT)
    expected = {"spark-1": (["spark-1", "spark-2"], "192.168.100.11"),
                "spark-3": (["spark-3", "spark-4"], "192.168.100.13")}
    for head, (members, address) in expected.items():
        seen = rendered[head]
        assert seen["verify"]["members"] == members
        assert seen["verify"]["address"].startswith(address + ":")
        assert seen["health"]["expected_members"] == len(members)
        assert seen["health"]["address"] == seen["verify"]["address"]
        # The inventory names no head (sparkfleet_ray_head_host): each worker joins, and each member's ray
        # executor connects to, the head of its own cluster, found in the plan.
        for member in members:
            seen = rendered[member]
            assert seen["worker_head"] == head
            # The one ray role runs the head on the head and joins it everywhere else.
            assert seen["kind"] == ("head" if member == head else "worker")
            assert seen["verify"]["members"] == members
            assert seen["ray_address"] == seen["verify"]["address"]
            assert seen["ray_address"].startswith(address + ":")


def test_a_worker_takes_its_heads_ports_from_the_plan_and_refuses_another_head(render_role_vars):
    """The head's GCS and dashboard ports come from the plan only (no second computation from hostvars): a
    ray_worker_head_host naming another head than the plan's is refused by the role's own check."""
    what = ("{'port': ray_worker_head_port | int, 'dashboard': ray_worker_head_dashboard_port | int, "
            "'plan_gcs': _ray_host.ray.gcs_port, 'plan_dashboard': _ray_host.ray.dashboard_port, "
            "'head_ok': ray_worker_head_host == (_ray_host.ray.head | default(ray_worker_head_host, true))}")
    rendered = render_role_vars(INVENTORY, FILES, what, hosts="spark-2")
    assert rendered["spark-2"]["port"] == rendered["spark-2"]["plan_gcs"] and rendered["spark-2"]["port"] > 0
    assert rendered["spark-2"]["dashboard"] == rendered["spark-2"]["plan_dashboard"]
    assert rendered["spark-2"]["head_ok"] is True
    # spark-2 belongs to spark-1's cluster; told to join spark-3, the role's check fails
    rendered = render_role_vars(INVENTORY, FILES, what, hosts="spark-2", extra_vars={"ray_worker_head_host": "spark-3"})
    assert rendered["spark-2"]["head_ok"] is False
    text = open(os.path.join(REPO, "roles", "ray", "tasks", "preflight.yml")).read()
    assert "ray_worker_head_host == (_ray_host.ray.head | default(ray_worker_head_host, true))" in text
