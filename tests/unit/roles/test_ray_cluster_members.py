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
