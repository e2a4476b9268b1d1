# -*- coding: utf-8 -*-
"""What the fleet_health probe checks on a host (plugins/module_utils/health_probe.py, filters health_endpoints,
health_peers, health_probe_config), on a real fleet plan: the endpoints with their key files, the peers to ping,
the units to watch and one section per check, empty where the check is off."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.sparkfleet.gb10.plugins.filter.health_probe import FilterModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

FILTERS = FilterModule().filters()
SHARED = [{"name": "tp", "model": "org/tp", "nodes": ["h", "w"], "port": 8100},
          {"name": "r", "model": "org/r", "nodes": ["h", "w"], "executor": "ray", "port": 8200, "host": "10.0.0.1"}]
FLEET = {"h": {"group_names": ["sparks", "ray_head"], "sparkfleet_fabric_address": "10.0.0.1",
               "sparkfleet_models": SHARED + [{"name": "solo", "model": "org/solo", "served_name": "Solo",
                                               "api_key_file": "/keys/solo.env"}]},
         "w": {"group_names": ["sparks", "ray_workers"], "sparkfleet_fabric_address": "10.0.0.2",
               "sparkfleet_models": SHARED},
         "x": {"group_names": ["sparks"]}}
# fleet_health's variables without their prefix, as lookup sparkfleet.gb10.role_vars gives them (the role's
# defaults with the lookups' answers).
SETTINGS = {"textfile_dir": "/tf", "timeout": 60, "nccl_env_file": "/etc/sparkfleet/nccl.env",
            "benchmark_file": "/b.json", "page_cache_file": "/pc.json", "reboot_hold_file": "/hold.json",
            "vllm_secrets_dir": "/etc/sparkfleet/vllm", "ray": True, "ray_head_unit": "ray-head",
            "ray_worker_unit": "ray-worker", "ray_port": 6379, "ray_auth_token_file": "/tok",
            "venv_path": "/opt/venv", "driver": True, "proc_driver_version": "/proc/driver/nvidia/version",
            "nvidia_smi": "/usr/bin/nvidia-smi", "kernel": True, "boot_dir": "/boot", "grub_dir": "",
            "etc_default": "/etc/default", "lib_dir": "/lib/sf", "modinfo": "/usr/sbin/modinfo",
            "proc_osrelease": "/proc/sys/kernel/osrelease", "fabric": True, "fabric_ifname": "enp1s0f1np1",
            "memory": True, "proc_meminfo": "/proc/meminfo", "proc_pressure_memory": "/proc/pressure/memory",
            "memory_guard_unit": "earlyoom"}
PEERS = [{"name": "w", "address": "10.0.0.2"}]


@pytest.fixture(scope="module")
def views():
    plan = fp.build(FLEET)
    return dict((host, fp.host_view(plan, host, unit_prefix="u-")) for host in FLEET)


def config(view, address="10.0.0.1", **settings):
    return FILTERS["health_probe_config"](view, dict(SETTINGS, **settings), PEERS, address)


def test_the_settings_are_fleet_healths_variables():
    """Every setting the probe's configuration reads is a variable of the role (none is invented here)."""
    with open(os.path.join(fp.ROLES_DIR, "fleet_health", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    assert set("fleet_health_" + name for name in SETTINGS) <= set(defaults)


def test_endpoints_carry_the_key_file_of_the_entry_else_the_secrets_dir(views):
    assert FILTERS["health_endpoints"](views["h"], "/s") == [
        {"name": "tp", "served_name": "org/tp", "port": 8100, "host": "127.0.0.1", "api_key_file": "/s/tp.env"},
        {"name": "r", "served_name": "org/r", "port": 8200, "host": "10.0.0.1", "api_key_file": "/s/r.env"},
        {"name": "solo", "served_name": "Solo", "port": fp.DEFAULT_PORT, "host": "127.0.0.1",
         "api_key_file": "/keys/solo.env"}]
    # a follower serves no API
    assert FILTERS["health_endpoints"](views["w"], "/s") == []


def test_peers_are_the_other_hosts_with_a_fabric_address():
    hostvars = {"a": {"sparkfleet_fabric_address": "10.0.0.1"}, "b": {}, "c": {"sparkfleet_fabric_address": ""},
                "d": {"sparkfleet_fabric_address": "10.0.0.4"}}
    assert FILTERS["health_peers"](["a", "b", "c", "d"], hostvars, "a") == [{"name": "d", "address": "10.0.0.4"}]
    assert FILTERS["health_peers"]([], hostvars, "a") == []


def test_a_ray_heads_probe_watches_its_units_and_asks_ray(views):
    got = config(views["h"])
    assert got["units"] == [{"name": "u-tp", "kind": "vllm"}, {"name": "u-r", "kind": "vllm"},
                            {"name": "u-solo", "kind": "vllm"}, {"name": "ray-head", "kind": "ray"},
                            {"name": "earlyoom", "kind": "guard"}]
    assert got["ray"] == {"expected_members": 2, "ray": "/opt/venv/bin/ray", "address": "10.0.0.1:6379",
                          "token_file": "/tok"}
    # no fabric address: Ray is asked on the loopback
    assert config(views["h"], address="")["ray"]["address"] == "127.0.0.1:6379"


def test_a_workers_probe_watches_its_ray_worker_and_asks_no_ray(views):
    got = config(views["w"])
    assert got["units"] == [{"name": "u-tp", "kind": "vllm"}, {"name": "ray-worker", "kind": "ray"},
                            {"name": "earlyoom", "kind": "guard"}]
    assert got["ray"] == {} and got["endpoints"] == []
    assert config(views["x"])["units"] == [{"name": "earlyoom", "kind": "guard"}]


def test_every_section_is_filled_with_its_check_on(views):
    got = config(views["h"], timeout="30")
    assert (got["textfile_dir"], got["textfile_name"], got["timeout"]) == ("/tf", "sparkfleet_health.prom", 30)
    assert [got[name] for name in ("nccl_env_file", "benchmark_file", "page_cache_file", "reboot_hold_file")] == [
        "/etc/sparkfleet/nccl.env", "/b.json", "/pc.json", "/hold.json"]
    assert got["endpoints"] == FILTERS["health_endpoints"](views["h"], SETTINGS["vllm_secrets_dir"])
    assert got["driver"] == {"proc_version": "/proc/driver/nvidia/version", "nvidia_smi": "/usr/bin/nvidia-smi"}
    assert got["kernel"] == {"boot_dir": "/boot", "modinfo": "/usr/sbin/modinfo",
                             "proc_osrelease": "/proc/sys/kernel/osrelease", "grub_dir": "",
                             "etc_default": "/etc/default", "lib_dir": "/lib/sf", "module": "nvidia",
                             "branch": rulebook.setting("driver_branch"),
                             "module_package": rulebook.setting("nvidia_kernel_module_package"),
                             "headers_package": rulebook.setting("kernel_headers_package"),
                             "known_bad_kernels": rulebook.setting("known_bad_kernels")}
    assert got["memory"] == {"meminfo": "/proc/meminfo", "pressure": "/proc/pressure/memory"}
    assert got["fabric"] == {"ifname": "enp1s0f1np1", "mtu": int(rulebook.setting("fabric_mtu")),
                             "ping_payload": int(rulebook.setting("jumbo_ping_payload")), "peers": PEERS}


@pytest.mark.parametrize("off", [False, "no", "false", 0])
def test_a_check_that_is_off_has_an_empty_section(views, off):
    got = config(views["h"], ray=off, driver=off, kernel=off, memory=off, fabric=off)
    assert [got[name] for name in ("ray", "driver", "kernel", "memory", "fabric")] == [{}, {}, {}, {}, {}]
    # the vLLM units stay watched; neither the Ray unit nor the guard is
    assert got["units"] == [{"name": "u-tp", "kind": "vllm"}, {"name": "u-r", "kind": "vllm"},
                            {"name": "u-solo", "kind": "vllm"}]


def test_no_guard_unit_no_guard_check(views):
    assert config(views["x"], memory_guard_unit="")["units"] == []


def test_the_view_is_not_changed(views):
    before = copy.deepcopy(views["h"])
    config(views["h"])
    assert views["h"] == before
