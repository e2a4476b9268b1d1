# -*- coding: utf-8 -*-
import os
import shutil
import subprocess

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_env import nccl_env, nccl_env_vars, FilterModule
from ansible_collections.sparkfleet.gb10.plugins.modules import gb10_facts as m
from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_env as nccl_env_util
from gb10_fixture_params import params_for as fixture_params  # tests/unit/gb10_fixture_params.py

FIXTURES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gb10"))
FABRIC = {"interface": "enp1s0f1np1", "address": "192.168.100.10"}

# What 003 ran on the same cabling (f1 halves), one line per variable.
SEED_003_ENV = {
    "NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1",
    "NCCL_IB_DISABLE": "0",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_NET_PLUGIN": "none",
    "NCCL_IB_ROCE_VERSION_NUM": "2",
    "NCCL_IB_TIMEOUT": "22",
    "RAY_memory_monitor_refresh_ms": "0",
    "GLOO_SOCKET_IFNAME": "enp1s0f1np1",
    # 003's VLLM_USE_FLASHINFER_MOE_FP4=0 is replaced by --moe-backend on the pinned release (rulebook.VERDICTS).
    "VLLM_MARLIN_USE_ATOMIC_ADD": "1",
}
# What 004's head node exported (f0 cabling there, so the interface differs); the rule book departs on purpose:
SEED_004_ENV = {
    "NCCL_SOCKET_IFNAME": "enp1s0f1np1",   # 004 used enp1s0f0np0: the cabled half, from facts
    "UCX_NET_DEVICES": "enp1s0f1np1",
    "NCCL_P2P_DISABLE": "1",
    "VLLM_HOST_IP": "192.168.100.10",
    "RAY_memory_usage_threshold": "1.0",
}
DELIBERATE = {
    "NCCL_IB_DISABLE": ("1", "0", "rule nccl_ib_transport: sockets give ~2 GB/s, RoCE ~24 GB/s"),
    "NCCL_NET_GDR_LEVEL": ("SYS", "LOC", "rule gpudirect_rdma: GPUDirect RDMA is impossible on GB10"),
}


def run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def facts(variant):
    root = os.path.join(FIXTURES, variant)
    params = fixture_params(root)
    return m.gather(params, run, lambda n: n if os.sep in n else shutil.which(n))


def test_registered():
    filters = FilterModule().filters()
    assert filters["nccl_env"] is nccl_env and filters["nccl_env_vars"] is nccl_env_vars
    assert set(filters) == {"nccl_env", "nccl_env_vars", "qsfp_second_half"}


def test_nominal_matches_seed_003():
    out = nccl_env(facts("nominal"), FABRIC, host="spark-1")
    assert out["transport"] == "roce" and out["warnings"] == [] and out["overridden"] == []
    for name, value in SEED_003_ENV.items():
        assert out["env"][name] == value, name
    for name, value in SEED_004_ENV.items():
        assert out["env"][name] == value, name
    for name, (seed, ours, _why) in DELIBERATE.items():
        assert out["env"][name] == ours and ours != seed
    assert out["ib_hca"] == ["rocep1s0f1", "roceP2p1s0f1"] and out["gid_index"] == 3
    assert out["ray_node_ip"] == "192.168.100.10"
    assert out["env"]["TRITON_PTXAS_PATH"] == "/usr/local/cuda/bin/ptxas"
    assert all(isinstance(v, str) for v in out["env"].values())
    assert nccl_env_vars(facts("nominal"), FABRIC) == out["env"]


def test_link_down_half_uses_the_live_half_and_says_so():
    out = nccl_env(facts("link_down_half"), FABRIC, host="spark-1")
    assert out["env"]["NCCL_IB_HCA"] == "rocep1s0f1"
    assert any("roceP2p1s0f1" in w and "not ACTIVE" in w for w in out["warnings"])


@pytest.mark.parametrize("variant,word", [("no_roce", "no RoCE device"), ("no_rocev2_ipv4_gid", "RoCE v2 GID")])
def test_no_usable_roce_is_an_error(variant, word):
    with pytest.raises(AnsibleFilterError) as err:
        nccl_env(facts(variant), FABRIC, host="spark-1")
    msg = str(err.value)
    assert "spark-1" in msg and word in msg and "allow_socket_fallback" in msg and "2.0 GB/s" in msg


@pytest.mark.parametrize("variant", ["no_roce", "no_rocev2_ipv4_gid"])
def test_socket_fallback_when_allowed_is_loud(variant):
    out = nccl_env(facts(variant), dict(FABRIC, allow_socket_fallback=True), host="spark-1")
    assert out["transport"] == "socket"
    assert out["env"]["NCCL_IB_DISABLE"] == "1" and "NCCL_IB_HCA" not in out["env"]
    assert out["warnings"][0].startswith("SOCKET FALLBACK")
    assert out["env"]["NCCL_SOCKET_IFNAME"] == "enp1s0f1np1"


def test_mtu_1500_warns():
    out = nccl_env(facts("mtu_1500"), FABRIC)
    assert any("MTU 1500" in w for w in out["warnings"])


def test_nccl_conf_ib_disable_warns():
    out = nccl_env(facts("nccl_ib_disabled"), FABRIC)
    assert any("NCCL_IB_DISABLE=1" in w for w in out["warnings"])
    assert out["env"]["NCCL_IB_DISABLE"] == "0"


def test_gid_index_prefers_the_fabric_address():
    gb10 = facts("nominal")
    port = gb10["roce"]["rocep1s0f1"]["ports"]["1"]
    port["gids"].append({"index": 5, "gid": "::ffff:10.0.0.1", "type": "RoCE v2", "ndev": "enp1s0f1np1",
                         "ipv4": "10.0.0.1"})
    for dev in ("rocep1s0f1", "roceP2p1s0f1"):
        gb10["roce"][dev]["ports"]["1"]["gids"].append(
            {"index": 7, "gid": "x", "type": "RoCE v2", "ndev": "n", "ipv4": "192.168.77.1"})
    out = nccl_env(gb10, {"interface": "enp1s0f1np1", "address": "192.168.77.1"})
    assert out["gid_index"] == 7
    out = nccl_env(gb10, FABRIC)
    assert out["gid_index"] == 3


def test_overrides_win_and_are_reported():
    out = nccl_env(facts("nominal"), dict(FABRIC, overrides={"NCCL_IB_TIMEOUT": 23, "NCCL_DEBUG": "INFO",
                                                             "NCCL_NET_PLUGIN": "none"}))
    assert out["env"]["NCCL_IB_TIMEOUT"] == "23" and out["env"]["NCCL_DEBUG"] == "INFO"
    assert out["overridden"] == [{"name": "NCCL_DEBUG", "computed": None, "value": "INFO"},
                                 {"name": "NCCL_IB_TIMEOUT", "computed": "22", "value": "23"}]


def test_override_to_sockets_is_loud():
    out = nccl_env(facts("nominal"), dict(FABRIC, overrides={"NCCL_IB_DISABLE": "1"}))
    assert out["transport"] == "socket" and out["warnings"][0].startswith("SOCKET FALLBACK")


@pytest.mark.parametrize("gb10,fabric,word", [
    ("nope", FABRIC, "ansible_facts.gb10"),
    (None, "x", "fabric must be a dict"),
    (None, {"interface": "enp1s0f1np1"}, "address"),
    (None, {"address": "192.168.100.10"}, "interface"),
    (None, dict(FABRIC, interfce="x"), "interfce"),
    (None, dict(FABRIC, interface="eth9"), "eth9"),
    (None, dict(FABRIC, overrides={"bad name": 1}), "overrides"),
    (None, dict(FABRIC, allow_socket_fallback="yes"), "allow_socket_fallback"),
])
def test_bad_input(gb10, fabric, word):
    with pytest.raises(AnsibleFilterError) as err:
        nccl_env(facts("nominal") if gb10 is None else gb10, fabric, host="spark-2")
    assert "spark-2" in str(err.value) and word in str(err.value)


def test_f0_cabling_like_seed_004():
    gb10 = facts("nominal")
    for dev, other in (("rocep1s0f0", "rocep1s0f1"), ("roceP2p1s0f0", "roceP2p1s0f1")):
        gb10["roce"][dev]["ports"]["1"], gb10["roce"][other]["ports"]["1"] = \
            gb10["roce"][other]["ports"]["1"], gb10["roce"][dev]["ports"]["1"]
    out = nccl_env(gb10, {"interface": "enp1s0f0np0", "address": "192.168.100.10"})
    assert out["env"]["NCCL_SOCKET_IFNAME"] == "enp1s0f0np0"
    assert out["env"]["NCCL_IB_HCA"] == "rocep1s0f0,roceP2p1s0f0"


@pytest.mark.parametrize("text, value", [
    ("1", 1), ("0", 0), (" 2", 2), ("0x10", 16), ("010", 8), ("-1", -1), ("+3", 3), ("7abc", 7),
    ("true", 0), ("True", 0), ("yes", 0), ("", 0), ("0x", 0), ("09", 0),
])
def test_nccl_int_reads_as_nccls_strtoll(text, value):
    """src/misc/param.cc: strtoll(value, NULL, 0). '09' reads 0 (octal stops at 9), '0x' reads 0."""
    assert nccl_env_util.nccl_int(text) == value
