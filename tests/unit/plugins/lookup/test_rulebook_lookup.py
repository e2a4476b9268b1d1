# -*- coding: utf-8 -*-
import re

import pytest

from ansible.errors import AnsibleError

from ansible_collections.sparkfleet.gb10.plugins.lookup.rulebook import LookupModule, known_keys

# The names roles use; each must exist with this exact name.
ROLE_KEYS = {
    "driver_branch": "580",
    "driver_forbidden_branches": ["590"],
    "driver_recommended_version": "580.142",
    "nccl_version": "2.28.9",
    "nccl_git_tag": "v2.28.9-1",
    "nccl_git_url": "https://github.com/NVIDIA/nccl.git",
    "fabric_mtu": 9000,
    "jumbo_ping_payload": 8972,
    "gpu_memory_utilization_ceiling": 0.90,
    "python_version": "3.12",
    "ray_memory_monitor_refresh_ms": 0,
    "ray_memory_usage_threshold": 1.0,
    "nccl_bus_bandwidth_floor_gbps": 15.0,
    "nccl_conf_forbidden": ["NCCL_IB_DISABLE=1"],
    "reasoning_min_max_tokens": 512,
    "vllm_start_timeout_sec": 1800,
}


# The release pins: their values live in the rule book alone (a bump touches it, the lock and
# generated files), so the lookup is checked to hand them through unchanged.
PIN_KEYS = ("vllm_version", "triton_version", "transformers_version", "ray_version", "torch_version")


@pytest.fixture
def lookup():
    return LookupModule()


@pytest.mark.parametrize("key", sorted(ROLE_KEYS))
def test_role_keys(lookup, key):
    assert lookup.run([key]) == [ROLE_KEYS[key]]


@pytest.mark.parametrize("key", PIN_KEYS)
def test_pins_come_from_the_rulebook(lookup, key):
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
    value = lookup.run([key])[0]
    assert value == rulebook.setting(key) and re.match(r"^\d+\.\d+(\.\d+)?$", value)


def test_cutlass_patch(lookup):
    patch = lookup.run(["cutlass_fp8_patch"])[0]
    assert patch["file"].endswith("w8a8_utils.py")
    assert "cutlass_block_fp8_supported" in patch["functions"]


def test_several_terms_in_order(lookup):
    assert lookup.run(["fabric_mtu", "jumbo_ping_payload"]) == [9000, 8972]


def test_kernel_env(lookup):
    assert lookup.run(["kernel_env"])[0]["VLLM_MARLIN_USE_ATOMIC_ADD"] == "1"


def test_unknown_key_names_key_and_known_keys(lookup):
    with pytest.raises(AnsibleError) as err:
        lookup.run(["driver_brnach"])
    msg = str(err.value)
    assert "driver_brnach" in msg and "driver_branch" in msg and "nccl_git_tag" in msg


def test_known_keys_cover_role_keys():
    assert set(ROLE_KEYS) <= set(known_keys())
