# -*- coding: utf-8 -*-
"""Legal YAML that its reader takes otherwise than meant, and refusals that name the variable the user set rather
than a value derived from it (issue 52): each is refused by preflight, before any host changes, naming the host, the
variable, its value and the fix."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess

import pytest

from ansible_collections.sparkfleet.gb10.plugins.action.fleet_preflight import fleet_checks
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.modules import gb10_facts
from gb10_fixture_params import params_for as fixture_params  # tests/unit/gb10_fixture_params.py

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
_FACTS = {}


def facts(variant="nominal"):
    """ansible_facts.gb10 gathered from a recorded GB10 shape (tests/fixtures/gb10): both halves of the cabled port
    up with RoCE ACTIVE (nominal), or no RoCE device at all (no_roce)."""
    if variant not in _FACTS:
        def run(argv):
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
            return proc.returncode, proc.stdout, proc.stderr
        params = fixture_params(os.path.join(TOP, "tests", "fixtures", "gb10", variant),
                                netdev_pattern=rulebook.setting("qsfp_netdev_pattern"))
        _FACTS[variant] = gb10_facts.gather(params, run, lambda n: n if os.sep in n else shutil.which(n))
    return copy.deepcopy(_FACTS[variant])


TP2 = {"name": "tp2", "model": "org/tp2", "checkpoint_format": "fp8", "tensor_parallel_size": 2, "nodes": ["a", "b"]}


def host(address, variant="nominal", **variables):
    host_vars = {"group_names": ["sparks"], "sparkfleet_fabric_address": address, "sparkfleet_fabric_subnet":
                 "192.168.100.0/24", "sparkfleet_models": [dict(TP2)]}
    if variant:
        host_vars["ansible_facts"] = {"gb10": facts(variant)}
    host_vars.update(variables)
    return host_vars


def said(findings):
    return [(f.host, f.variable, f.value) for f in findings]


# ------------------------------------------------------------ an NCCL interface override without a fabric address
@pytest.mark.parametrize("variable", fp.NCCL_OVERRIDE_MAPS)
@pytest.mark.parametrize("name, value, words", [
    ("NCCL_SOCKET_IFNAME", "enp1s0f0np0", "names enp1s0f0np0, which has no fabric address"),  # the uncabled port
    ("NCCL_SOCKET_IFNAME", "enP7s7", "names enP7s7, which has no fabric address"),  # the management port
    ("NCCL_SOCKET_IFNAME", "=enp1s0f1", "names enp1s0f1, which has no fabric address"),  # '=': the exact name
    ("NCCL_SOCKET_IFNAME", "^enp1,enP2", "leaves out enP2p1s0f1np1, enp1s0f1np1"),
    ("GLOO_SOCKET_IFNAME", "enp1s0f1", "names enp1s0f1, which has no fabric address"),  # Gloo: one exact name
    ("UCX_NET_DEVICES", "enp1s0f0np0:1", "names enp1s0f0np0"),
    ("NCCL_IB_HCA", "rocep1s0f0:1", "names rocep1s0f0"),  # the uncabled port's RoCE device
    ("NCCL_IB_HCA", "mlx5_0", "names mlx5_0"),
])
def test_an_nccl_interface_override_without_a_fabric_address_is_refused(variable, name, value, words):
    found = fp.check_nccl_overrides({"a": host("192.168.100.10", **{variable: {name: value}})})
    assert said(found) == [("a", "%s.%s" % (variable, name), value)]
    assert words in found[0].problem and "hangs at its first collective" in found[0].problem
    assert found[0].fix.startswith("remove %s from %s" % (name, variable))


@pytest.mark.parametrize("name, value", [("NCCL_SOCKET_IFNAME", "enp1s0f1np1"), ("NCCL_SOCKET_IFNAME", "enp1"),
                                         ("NCCL_SOCKET_IFNAME", "=enp1s0f1np1,enP2p1s0f1np1"),
                                         ("NCCL_SOCKET_IFNAME", "^enP7s7"), ("GLOO_SOCKET_IFNAME", "enp1s0f1np1"),
                                         ("NCCL_IB_HCA", "rocep1s0f1:1,roceP2p1s0f1:1"), ("NCCL_IB_HCA", "=roceP2p1s0f1"),
                                         ("NCCL_IB_HCA", "{{ my_hcas }}"), ("NCCL_DEBUG", "INFO")])
def test_an_override_on_the_fabric_passes(name, value):
    assert fp.check_nccl_overrides({"a": host("192.168.100.10", vllm_service_nccl_overrides={name: value})}) == []


def test_without_facts_the_roce_devices_are_the_gb10_names_of_the_fabric_halves():
    found = fp.check_nccl_overrides({"a": host("192.168.100.10", None, nccl_env_extra={"NCCL_IB_HCA": "rocep1s0f0"})})
    assert said(found) == [("a", "nccl_env_extra.NCCL_IB_HCA", "rocep1s0f0")]
    assert "roceP2p1s0f1, rocep1s0f1, by their GB10 names" in found[0].problem
    moved = host("192.168.100.10", None, sparkfleet_fabric_ifname="enp1s0f0np0",
                 nccl_env_extra={"NCCL_IB_HCA": "rocep1s0f0,roceP2p1s0f0"})
    assert fp.check_nccl_overrides({"a": moved}) == []  # port 0 cabled: its devices are the fabric's


# ------------------------------------------------------------ NCCL_IB_DISABLE=1 where RoCE is up
@pytest.mark.parametrize("variable", fp.NCCL_OVERRIDE_MAPS)
@pytest.mark.parametrize("value", ["1", 1, "2", "0x1"])
def test_rdma_turned_off_where_roce_is_active_is_refused(variable, value):
    found = fp.check_nccl_overrides({"a": host("192.168.100.10", **{variable: {"NCCL_IB_DISABLE": value}})})
    assert said(found) == [("a", "%s.NCCL_IB_DISABLE" % variable, value)]
    assert "ACTIVE RoCE on the fabric port (roceP2p1s0f1, rocep1s0f1" in found[0].problem
    assert "remove NCCL_IB_DISABLE from %s" % variable in found[0].fix


@pytest.mark.parametrize("variable", fp.NCCL_OVERRIDE_MAPS)
@pytest.mark.parametrize("value", ["true", True, "yes", "on"])
def test_a_word_for_ib_disable_is_refused_as_nccl_reads_it(variable, value):
    """NCCL reads NCCL_IB_DISABLE with strtoll: a word reads 0, so RoCE stays on whatever the user meant. Refused
    with what NCCL reads, not as a socket fallback (the old check said TCP, which is the opposite of what runs)."""
    found = fp.check_nccl_overrides({"a": host("192.168.100.10", **{variable: {"NCCL_IB_DISABLE": value}})})
    assert said(found) == [("a", "%s.NCCL_IB_DISABLE" % variable, value)]
    assert "reads 0, so it does not do what the word says" in found[0].problem
    assert "TCP" not in found[0].problem and "write 0" in found[0].fix


@pytest.mark.parametrize("variant", ["no_roce", "link_down_half", None])
def test_rdma_turned_off_is_left_alone_without_active_roce_or_without_facts(variant):
    """No RoCE: TCP is all there is (sparkfleet_allow_socket_fallback decides). No facts (a host outside --limit):
    this run does not change the host, and a run that reaches it reads its facts and judges it then."""
    fleet = {"a": host("192.168.100.10", variant, ray_nccl_overrides={"NCCL_IB_DISABLE": "1"})}
    found = fp.check_nccl_overrides(fleet)
    if variant == "link_down_half":  # the other half is still ACTIVE
        assert said(found) == [("a", "ray_nccl_overrides.NCCL_IB_DISABLE", "1")]
    else:
        assert found == []
    assert fp.check_nccl_overrides({"a": host("192.168.100.10", ray_nccl_overrides={"NCCL_IB_DISABLE": "0"})}) == []


# ------------------------------------------------------------ an API only the fabric reaches
@pytest.mark.parametrize("bind, words", [("192.168.100.10", "is the fabric address (sparkfleet_fabric_address)"),
                                         ("192.168.101.10", "an address of the fabric subnet 192.168.101.0/24")])
@pytest.mark.parametrize("nodes", [None, ["a", "b"]])
def test_an_api_bound_to_an_address_only_the_fabric_reaches_is_refused(bind, words, nodes):
    entry = {"name": "m", "model": "org/m", "host": bind}
    if nodes:
        entry["nodes"] = nodes
    found = fp.check_api_addresses({"a": host("192.168.100.10", sparkfleet_models=[entry])})
    assert said(found) == [("a", "sparkfleet_models[0] (m).host", bind)]
    assert words in found[0].problem and "no client on the LAN can connect" in found[0].problem
    assert found[0].fix.startswith("leave host out (0.0.0.0")
    # one host alone may bind its LAN address instead; a model over several Sparks only every address
    assert ("192.168.1.11" in found[0].fix) == (nodes is None)


def test_an_api_on_a_qsfp_port_by_the_facts_is_refused():
    gb10 = facts()
    gb10["netdevs"]["enp1s0f0np0"]["ipv4"] = ["10.9.0.1/24"]
    gb10["ipv4_addresses"].append("10.9.0.1")
    fleet = {"a": host("192.168.100.10", sparkfleet_models=[{"name": "m", "model": "org/m", "host": "10.9.0.1"}],
                       ansible_facts={"gb10": gb10})}
    found = fp.check_api_addresses(fleet)
    assert said(found) == [("a", "sparkfleet_models[0] (m).host", "10.9.0.1")]
    assert "an address of the QSFP port enp1s0f0np0" in found[0].problem


# ------------------------------------------------------------ a serving member moved to driver 590 with a reason
def test_a_serving_host_on_a_forbidden_branch_is_refused_even_with_a_reason():
    reason = "trying the new branch's fixes on one node first"
    fleet = {"a": host("192.168.100.10", nvidia_driver_branch="590", nvidia_driver_accept_forbidden_branch_reason=reason),
             "b": host("192.168.100.11", nvidia_driver_branch="590", nvidia_driver_accept_forbidden_branch_reason=reason,
                       sparkfleet_models=[])}
    found = fp.check_serving_driver(fleet)
    assert said(found) == [("a", "nvidia_driver_branch", "590")]  # b serves nothing: the reason is what it is for
    assert "this host serves tp2" in found[0].problem and "deadlocks CUDA graphs" in found[0].problem
    assert reason in found[0].problem
    assert "remove nvidia_driver_branch and nvidia_driver_accept_forbidden_branch_reason from a" in found[0].fix


def test_a_ray_follower_serves_too_and_580_or_no_reason_are_not_this_check():
    follower = host("192.168.100.11", nvidia_driver_branch="590", nvidia_driver_accept_forbidden_branch_reason="x",
                    sparkfleet_models=[dict(TP2, executor="ray")])
    assert said(fp.check_serving_driver({"b": follower})) == [("b", "nvidia_driver_branch", "590")]
    assert fp.check_serving_driver({"b": dict(follower, nvidia_driver_branch="580")}) == []
    # without a reason role_settings refuses the branch itself (the driver role's own check)
    assert fp.check_serving_driver({"b": dict(follower, nvidia_driver_accept_forbidden_branch_reason="")}) == []


def test_the_new_checks_run_in_preflight():
    fleet = {"a": host("192.168.100.10", nvidia_driver_branch="590", nvidia_driver_accept_forbidden_branch_reason="x",
                       ray_nccl_overrides={"NCCL_IB_DISABLE": "1"}),
             "b": host("192.168.100.11")}
    _plan, found = fp.judge_fleet(fleet, fp.load_role_specs(os.path.join(TOP, "roles")), fleet_checks())
    assert ("a", "nvidia_driver_branch", "590") in said(found)
    assert ("a", "ray_nccl_overrides.NCCL_IB_DISABLE", "1") in said(found)


# ------------------------------------------------------------ (b) the user's variable, not the derived value
SIZED = {"name": "q", "model": "org/q", "checkpoint_format": "bf16", "num_layers": 36, "num_kv_heads": 8,
         "head_dim": 128, "max_model_len": 32768}


def _models(fleet):
    checks = fleet_checks(os.path.join(TOP, "roles"))
    return fp.check_models(fleet, checks["entry_check"], checks["gpu_memory_utilization"], checks["utilization"])


@pytest.mark.parametrize("sizing", [SIZED, {"name": "q", "model": "org/q", "checkpoint_format": "bf16"}])
def test_weights_gib_that_puts_the_utilization_out_of_range_is_named_with_its_value(sizing):
    """1520 written for 15.2 GiB: with the KV-cache keys the host's arithmetic fails, without them the weights
    alone exceed the share; either way the refusal names weights_gib and 1520, not the utilization."""
    fleet = {"a": host("192.168.100.10", sparkfleet_models=[dict(sizing, weights_gib=1520)])}
    found = _models(fleet)
    assert said(found) == [("a", "sparkfleet_models[0] (q).weights_gib", 1520)]
    assert "the gpu-memory-utilization computed from it is out of range" in found[0].problem
    assert "its weights, 1520.0 GiB" in found[0].problem
    assert found[0].fix.startswith("check weights_gib")
    assert _models({"a": host("192.168.100.10", sparkfleet_models=[dict(sizing, weights_gib=15.2)])}) == []


def test_a_host_that_does_not_fit_for_another_reason_quotes_the_weights_gib_it_was_sized_with():
    """The KV cache, not the weights, is too large: the finding stays the host's, quoting weights_gib's value."""
    entry = dict(SIZED, weights_gib=60, max_num_seqs=64, max_model_len=131072)
    fleet = {"a": host("192.168.100.10", sparkfleet_models=[entry])}
    found = _models(fleet)
    assert said(found) == [("a", "sparkfleet_models", ["q"])]
    assert "sized from weights_gib (sparkfleet_models[0] (q).weights_gib=60)" in found[0].problem


def _ray_fleet():
    workers = dict((h, host(a, group_names=["sparks", "ray_workers"], sparkfleet_models=[], sparkfleet_cluster="lab"))
                   for h, a in (("b", "192.168.100.11"), ("c", "192.168.100.12")))
    return workers, {"all": ["a", "b", "c"], "sparks": ["b", "c"], "ray_head": ["a"], "ray_workers": ["b", "c"]}


def test_a_head_outside_group_sparks_is_named_by_its_group():
    fleet, groups = _ray_fleet()
    found = [f for f in fp.check_cluster_layout(fleet, groups=groups) if "ray_head" in f.variable]
    assert said(found) == [("b, c", "group ray_head", ["a"])]
    assert "group ray_head holds a, which is not in group sparks" in found[0].problem
    assert found[0].fix.startswith("put a in group sparks too")
    # without the groups (a role run on its own) the count is all preflight can say
    assert [f.problem for f in fp.check_cluster_layout(fleet) if "ray_head" in f.variable] == \
        ["cluster 'lab' has 0 Ray heads; it needs exactly one"]


def test_a_head_host_named_outside_group_sparks_is_not_called_missing_from_the_inventory():
    fleet, groups = _ray_fleet()
    groups = dict(groups, ray_head=[], other=["a"])
    for host_vars in fleet.values():
        host_vars["sparkfleet_ray_head_host"] = "a"
    found = [f for f in fp.check_cluster_layout(fleet, groups=groups) if f.variable == "sparkfleet_ray_head_host"]
    assert said(found) == [("b", "sparkfleet_ray_head_host", "a"), ("c", "sparkfleet_ray_head_host", "a")]
    assert "in the inventory but not in group sparks" in found[0].problem


def test_preflight_hands_the_inventory_groups_to_the_layout_check():
    fleet, groups = _ray_fleet()
    checks = dict(fleet_checks(os.path.join(TOP, "roles")), groups=groups)
    _plan, found = fp.judge_fleet(fleet, fp.load_role_specs(os.path.join(TOP, "roles")), checks)
    assert ("b, c", "group ray_head", ["a"]) in said(found)
    action = open(os.path.join(TOP, "plugins", "action", "fleet_preflight.py")).read()
    assert 'checks["groups"] = ' in action and 'task_vars.get("groups")' in action


def test_preflight_computes_each_hosts_memory_split_once():
    """check_models judges a host's memory arithmetic and the plan preflight builds carries it: one split per host,
    not one for the check and another for the plan (issue: the split ran in _check_memory and in plan_memory)."""
    calls = []
    checks = fleet_checks(os.path.join(TOP, "roles"))
    split = checks["gpu_memory_utilization"]

    def counted(gb10, entries, host_name):
        calls.append(host_name)
        return split(gb10, entries, host_name)

    sized = dict(SIZED, weights_gib=15.2, source={"type": "dir", "path": "/srv/models/q"})
    fleet = {"a": host("192.168.100.10", sparkfleet_models=[sized]),
             "b": host("192.168.100.11", sparkfleet_models=[dict(sized, name="r")])}
    plan, found = fp.judge_fleet(fleet, fp.load_role_specs(os.path.join(TOP, "roles")),
                                 dict(checks, gpu_memory_utilization=counted))
    assert found == [] and plan["hosts"]["a"]["memory"] and plan["hosts"]["b"]["memory"]
    assert sorted(calls) == ["a", "b"]


def test_a_split_that_fails_fails_again_from_the_memo():
    calls = []

    def too_big(gb10, entries, host_name):
        calls.append(host_name)
        raise ValueError("too big")

    once = fleet_plan.split_once(too_big)
    for dummy in range(2):
        with pytest.raises(ValueError, match="too big"):
            once({}, [{"name": "q"}], "a")
    assert calls == ["a"]
