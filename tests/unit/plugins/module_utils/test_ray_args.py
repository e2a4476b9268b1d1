# -*- coding: utf-8 -*-
"""ray start's argv and the Ray processes' environment (plugins/module_utils/ray_args.py), written out; the
contract tests check the argv rendered from every example inventory against the pinned Ray's options."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter import ray_args as ray_filters
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import ray_args as ra
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

HEAD_PORTS = {"gcs": 1, "node_manager": 2, "object_manager": 3, "runtime_env_agent": 4, "dashboard_agent_grpc": 5,
              "dashboard_agent_listen": 6, "metrics_export": 7, "ray_client_server": 8, "min_worker": 9,
              "max_worker": 10, "dashboard": 11}
WORKER_PORTS = dict((k, v) for k, v in HEAD_PORTS.items() if k not in ("gcs", "ray_client_server", "dashboard"))


def test_head_argv():
    assert ra.ray_args("head", "/v/bin/ray", "10.0.0.1", HEAD_PORTS, 1) == [
        "/v/bin/ray", "start", "--head", "--block", "--node-ip-address=10.0.0.1", "--port=1",
        "--node-manager-port=2", "--object-manager-port=3", "--runtime-env-agent-port=4",
        "--dashboard-agent-grpc-port=5", "--dashboard-agent-listen-port=6", "--metrics-export-port=7",
        "--ray-client-server-port=8", "--min-worker-port=9", "--max-worker-port=10", "--include-dashboard=true",
        "--dashboard-host=127.0.0.1", "--dashboard-port=11", "--num-gpus=1", "--disable-usage-stats"]


def test_worker_argv_and_the_optional_sizes():
    argv = ra.ray_args("worker", "/v/bin/ray", "10.0.0.2", WORKER_PORTS, 1, num_cpus=8, object_store_memory=2000,
                       extra_args=["--labels={}"], head_address="10.0.0.1:1")
    assert argv == [
        "/v/bin/ray", "start", "--block", "--address=10.0.0.1:1", "--node-ip-address=10.0.0.2",
        "--node-manager-port=2", "--object-manager-port=3", "--runtime-env-agent-port=4",
        "--dashboard-agent-grpc-port=5", "--dashboard-agent-listen-port=6", "--metrics-export-port=7",
        "--min-worker-port=9", "--max-worker-port=10", "--num-gpus=1", "--disable-usage-stats", "--num-cpus=8",
        "--object-store-memory=2000", "--labels={}"]
    assert "--include-dashboard=false" in ra.ray_args("head", "r", "a", HEAD_PORTS, 1, include_dashboard=False)


def test_the_role_defaults_hold_every_port_the_argv_sets():
    assert ra.ray_args("head", "r", "a", fp.ray_ports("ray_head"), 1)
    assert ra.ray_args("worker", "r", "a", fp.ray_ports("ray_worker"), 1, head_address="h:1")


@pytest.mark.parametrize("args, words", [
    (("boss", "r", "a", HEAD_PORTS, 1), "role must be one of head, worker"),
    (("head", "r", "a", WORKER_PORTS, 1), "lacks gcs, ray_client_server, dashboard"),
    (("worker", "r", "a", WORKER_PORTS, 1), "needs the head's address"),
])
def test_what_ray_start_cannot_be_given(args, words):
    with pytest.raises(ra.RayArgsError, match=words):
        ra.ray_args(*args)
    with pytest.raises(AnsibleFilterError, match=words):
        ray_filters.ray_args(*args)


def test_environment_order_the_inventory_wins():
    env = ra.ray_env("10.0.0.1", "svc", "/etc/t", nccl_env={"NCCL_IB_HCA": "x", "HOME": "/nccl"},
                     environment={"RAY_USAGE_STATS_ENABLED": "1"})
    assert env == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/etc/t", "VLLM_HOST_IP": "10.0.0.1",
                   "RAY_memory_monitor_refresh_ms": str(rulebook.setting("ray_memory_monitor_refresh_ms")),
                   "RAY_memory_usage_threshold": str(rulebook.setting("ray_memory_usage_threshold")),
                   "RAY_USAGE_STATS_ENABLED": "1", "HOME": "/nccl", "NCCL_IB_HCA": "x"}
    assert ray_filters.FilterModule().filters()["ray_env"]("a", "u", "t")["HOME"] == "/var/lib/u"


@pytest.mark.parametrize("extra", [["--redis-password", "pw-12345"], ["--redis-password=pw-12345"]])
def test_a_secret_in_ray_extra_args_is_refused(extra):
    """ray start's argv lands in the 0644 unit file and in ps."""
    found = ra.extra_args_problems(extra)
    assert len(found) == 1 and "secret on the command line" in found[0][0], found
