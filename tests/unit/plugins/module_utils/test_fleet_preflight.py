# -*- coding: utf-8 -*-
"""Whole-inventory checks: each finding names host, variable, value and fix."""

from __future__ import annotations

import os

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp

ROLES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles")

SPECS = {
    "qsfp_network": {
        "qsfp_network_mtu": {"type": "int"},
        "qsfp_network_interfaces": {"type": "list", "elements": "str"},
        "qsfp_network_apply": {"type": "str", "choices": ["try", "apply"]},
    },
    "nccl": {"nccl_ldconfig": {"type": "bool"}},
}


def test_role_specs_load_from_the_roles_directory():
    specs = fp.load_role_specs(ROLES_DIR)
    assert "host_facts" in specs
    assert specs["host_facts"]["host_facts_refresh"]["type"] == "bool"


@pytest.mark.parametrize("name, value, words", [
    ("qsfp_network_mtu", "jumbo", "convert to int"),
    ("qsfp_network_interfaces", {"a": 1}, "list"),
    ("qsfp_network_apply", "yolo", "one of"),
    ("nccl_ldconfig", "maybe", "bool"),
])
def test_wrong_types_are_found_with_host_variable_value_and_fix(name, value, words):
    findings = fp.check_variable_types("spark-2", {name: value, "unrelated": 1}, SPECS)
    assert len(findings) == 1
    finding = findings[0]
    assert (finding.host, finding.variable, finding.value) == ("spark-2", name, value)
    assert words in finding.problem
    assert "argument_specs.yml" in finding.fix


def test_right_types_give_no_findings():
    host_vars = {"qsfp_network_mtu": "9000", "qsfp_network_interfaces": ["enp1s0f1np1"], "nccl_ldconfig": True}
    assert fp.check_variable_types("spark-1", host_vars, SPECS) == []


def test_misspelt_variable_is_named_with_the_likely_fix():
    findings = fp.check_unknown_variables("spark-1", {"qsfp_network_mut": 9000}, SPECS)
    assert [f.variable for f in findings] == ["qsfp_network_mut"]
    assert "did you mean qsfp_network_mtu" in findings[0].fix


@pytest.mark.parametrize("name", ["sparkfleet_hf_token", "sparkfleet_api_key", "nccl_auth_token",
                                  "nccl_secret", "qsfp_network_password"])
def test_an_unknown_variable_named_like_a_secret_is_named_but_never_shown(name):
    findings = fp.check_unknown_variables("spark-1", {name: "sk-SECRET-123"}, SPECS)
    assert [f.variable for f in findings] == [name]
    assert "sk-SECRET-123" not in str(findings[0]) and findings[0].value == fp.SECRET_SHOWN


@pytest.mark.parametrize("name", ["qsfp_network_speed", "nccl_max_tokens", "nccl_keyring_dir"])
def test_an_unknown_variable_of_no_secret_kind_shows_its_value(name):
    findings = fp.check_unknown_variables("spark-1", {name: 200000}, SPECS)
    assert findings[0].value == 200000


def test_foreign_and_internal_variables_are_not_ours_to_judge():
    host_vars = {"ansible_host": "x", "my_own_var": 1, "_qsfp_network_tmp": 1, "nccl_ldconfig": False}
    assert fp.check_unknown_variables("spark-1", host_vars, SPECS) == []


def test_fleet_reports_every_finding_not_only_the_first():
    fleet = {
        "spark-1": {"qsfp_network_mtu": "x"},
        "spark-2": {"nccl_ldconfg": True, "qsfp_network_apply": "no"},
    }
    findings = fp.check_fleet(fleet, SPECS)
    assert sorted((f.host, f.variable) for f in findings) == [
        ("spark-1", "qsfp_network_mtu"),
        ("spark-2", "nccl_ldconfg"),
        ("spark-2", "qsfp_network_apply"),
    ]
    assert all(str(f).startswith(f.host + ": " + f.variable) for f in findings)


# ---- fleet-level checks, with the collection's real filters -------------------------------------

from ansible_collections.sparkfleet.gb10.plugins.filter.gpu_memory_utilization import gpu_memory_utilization  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_env import nccl_env  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.filter.vllm_args import check_entry  # noqa: E402

UTIL = {"ceiling": 0.90, "default": 0.87}
GB10 = {"memory": {"mem_total_bytes": 130663641088}, "driver": {"nvidia_smi_version": "580.142",
                                                                "kernel_module_version": "580.142"}}


def _models(fleet):
    return fp.check_models(fleet, check_entry,
                           lambda g, s, h: gpu_memory_utilization(g, s, host=h), UTIL)


def _host(address, models=None):
    return {"sparkfleet_fabric_address": address, "sparkfleet_fabric_subnet": "192.168.100.0/24",
            "sparkfleet_models": models or [], "ansible_facts": {"gb10": GB10}}


def test_fabric_addresses_unique_inside_subnet_and_present():
    fleet = {"a": _host("192.168.100.10"), "b": _host("192.168.100.10"), "c": _host("10.0.0.1"),
             "d": _host(None), "e": _host("192.168.100.255")}
    found = sorted((f.host, f.problem.split(" ")[0]) for f in fp.check_fabric(fleet))
    assert found == [("b", "also"), ("c", "outside"), ("d", "no"), ("e", "is")]


def test_good_fabric_gives_nothing():
    assert fp.check_fabric({"a": _host("192.168.100.10"), "b": _host("192.168.100.11")}) == []


TP2 = {"name": "m", "model": "org/m-fp8", "checkpoint_format": "fp8", "tensor_parallel_size": 2,
       "nodes": ["a", "b"], "executor": "mp"}


def test_a_consistent_two_node_model_passes():
    assert _models({"a": _host("192.168.100.10", [TP2]), "b": _host("192.168.100.11", [TP2])}) == []


def test_an_api_key_that_differs_between_members_is_named_but_never_shown():
    with_key = dict(TP2, api_key="sk-SECRET-123")
    findings = _models({"a": _host("192.168.100.10", [with_key]), "b": _host("192.168.100.11", [TP2])})
    differs = [f for f in findings if "differs from the entry" in f.problem]
    assert differs and all(".api_key" in f.variable for f in differs)
    assert not any("sk-SECRET-123" in str(f) for f in findings), [str(f) for f in findings]


def test_a_key_of_no_secret_kind_that_differs_shows_both_values():
    other = dict(TP2, max_num_batched_tokens=8192)
    findings = _models({"a": _host("192.168.100.10", [other]), "b": _host("192.168.100.11", [TP2])})
    differs = [f for f in findings if "differs from the entry" in f.problem]
    assert differs and "8192" in str(differs[0])


def test_tp_times_pp_must_equal_the_members():
    entry = dict(TP2, nodes=["a", "b", "c"])
    fleet = dict((h, _host("192.168.100.1%d" % i, [entry])) for i, h in enumerate("abc"))
    problems = [f.problem for f in _models(fleet)]
    assert any("TP x PP = 2 but the model spans 3" in p for p in problems)


def test_rule_book_refusals_reach_preflight():
    eager = {"name": "e", "model": "org/e", "checkpoint_format": "fp8", "enforce_eager": True}
    findings = _models({"a": _host("192.168.100.10", [eager])})
    assert len(findings) == 1 and "enforce" in findings[0].problem and findings[0].host == "a"


def test_utilizations_of_a_host_may_not_pass_the_ceiling():
    models = [{"name": "x", "model": "org/x", "checkpoint_format": "fp8", "port": 8000, "gpu_memory_utilization": 0.5},
              {"name": "y", "model": "org/y", "checkpoint_format": "fp8", "port": 8001, "gpu_memory_utilization": 0.5}]
    findings = _models({"a": _host("192.168.100.10", models)})
    assert [f.variable for f in findings] == ["sparkfleet_models[*].gpu_memory_utilization"]
    assert "1.00" in findings[0].problem and "0.90" in findings[0].problem


def test_forbidden_driver_branch_unless_accepted():
    fleet = {"a": _host("192.168.100.10")}
    fleet["a"]["ansible_facts"] = {"gb10": {"driver": {"nvidia_smi_version": "590.44.01"}}}
    found = fp.check_host_facts(fleet, ["590"], lambda g, f, h: nccl_env(g, f, host=h))
    assert len(found) == 1 and "590" in found[0].problem
    fleet["a"]["nvidia_driver_accept_forbidden_branch_reason"] = "testing the 590 fix"
    assert fp.check_host_facts(fleet, ["590"], lambda g, f, h: nccl_env(g, f, host=h)) == []


# ----------------------------------------------------------- Ray heads and ports
RAY_DEFAULTS = dict((role, fp.load_role_defaults(os.path.normpath(ROLES_DIR), "ray")[role + "_ports"])
                    for role in ("ray_head", "ray_worker"))


def _member(group, head="a", models=(), **extra):
    host_vars = {"group_names": ["sparks", group], "sparkfleet_ray_head_host": head,
                 "sparkfleet_models": list(models)}
    host_vars.update(extra)
    return host_vars


def test_ray_ports_come_from_the_role_defaults():
    import yaml
    with open(os.path.join(ROLES_DIR, "ray", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    for role in ("ray_head", "ray_worker"):
        assert RAY_DEFAULTS[role] == defaults[role + "_ports"]


def test_one_head_and_distinct_ports_pass():
    fleet = {"a": _member("ray_head", models=[TP2]), "b": _member("ray_workers", models=[TP2])}
    assert fp.check_cluster_layout(fleet, RAY_DEFAULTS) == []


def test_two_heads_in_one_cluster_are_refused():
    fleet = {"a": _member("ray_head"), "b": _member("ray_head")}
    found = fp.check_cluster_layout(fleet, RAY_DEFAULTS)
    assert [f.problem for f in found] == ["cluster 'default' has 2 Ray heads; it needs exactly one"]
    assert found[0].host == "a, b"


def test_separate_clusters_may_each_have_a_head():
    fleet = {"a": _member("ray_head", sparkfleet_cluster="one"),
             "b": _member("ray_head", head="b", sparkfleet_cluster="two")}
    assert fp.check_cluster_layout(fleet, RAY_DEFAULTS) == []


def test_a_head_of_another_cluster_is_named():
    """The override may not point a worker at another cluster's head: the plan (what verify and the health probe
    count) would disagree with whom the worker joins."""
    fleet = {"a": _member("ray_head", sparkfleet_cluster="one"), "b": _member("ray_workers", sparkfleet_cluster="one"),
             "c": _member("ray_head", head="c", sparkfleet_cluster="two"),
             "d": _member("ray_workers", head="a", sparkfleet_cluster="two")}
    found = fp.check_cluster_layout(fleet, RAY_DEFAULTS)
    assert [(f.host, f.variable, f.value) for f in found if "heads Ray cluster" in f.problem] == [
        ("d", "sparkfleet_ray_head_host", "a")]
    assert "a heads Ray cluster 'one', not this host's 'two'" in [f.problem for f in found][0]


def test_a_head_that_is_missing_or_not_a_head_is_named():
    fleet = {"a": _member("ray_head"), "b": _member("ray_workers", head="c")}
    found = fp.check_cluster_layout(fleet, RAY_DEFAULTS)
    assert any(f.host == "b" and f.variable == "sparkfleet_ray_head_host" and f.value == "c"
               and "not in this inventory" in f.problem for f in found)
    fleet = {"a": _member("ray_head"), "b": _member("ray_workers", head="b")}
    found = fp.check_cluster_layout(fleet, RAY_DEFAULTS)
    assert any(f.host == "b" and "b is not in group ray_head" in f.problem for f in found)
    assert any("name different heads" in f.problem for f in found)


def test_a_model_port_on_a_ray_port_is_refused():
    gcs = RAY_DEFAULTS["ray_head"]["gcs"]
    entry = dict(TP2, name="clash", port=gcs, nodes=["a"], tensor_parallel_size=1)
    found = fp.check_cluster_layout({"a": _member("ray_head", models=[entry])}, RAY_DEFAULTS)
    assert len(found) == 1
    assert found[0].value == gcs and "Ray (ray_head_ports.gcs)" in found[0].problem
    assert "sparkfleet_models[0]" in found[0].variable


def test_rendezvous_port_against_an_api_port_and_the_worker_range():
    other = dict(TP2, name="solo", port=29501, nodes=None, tensor_parallel_size=1)
    other.pop("nodes")
    found = fp.check_cluster_layout({"a": _member("ray_head", models=[other, TP2]),
                                     "b": _member("ray_workers", models=[TP2])}, RAY_DEFAULTS)
    assert [(f.host, f.value) for f in found] == [("a", 29501)]
    assert "model solo (port)" in found[0].problem
    inside = dict(TP2, port=20100)
    found = fp.check_cluster_layout({"a": _member("ray_head", models=[inside]),
                                     "b": _member("ray_workers", models=[inside])}, RAY_DEFAULTS)
    assert [f.problem for f in found] == ["inside Ray's worker port range 20000-20199"]


# The fabric firewall's inventory values, refused before anything changes.
@pytest.mark.parametrize("host_vars, variable, words", [
    ({"fabric_firewall_api_sources": ["10.0.0.0/24", "10.0.0.5"]}, "fabric_firewall_api_sources[1]", "CIDR"),
    ({"fabric_firewall_api_sources": ["mgmt-lan"]}, "fabric_firewall_api_sources[0]", "CIDR"),
    ({"fabric_firewall_extra_internal_ports": [8080, "70000"]}, "fabric_firewall_extra_internal_ports[1]", "1-65535"),
    ({"fabric_firewall_extra_internal_ports": ["8000-8010"],
      "sparkfleet_models": [{"name": "a", "model": "m", "port": 8005}]},
     "sparkfleet_models[0] (a).port", "also internal"),
    ({"model_store_rsync_port": 8000,
      "sparkfleet_models": [{"name": "a", "model": "m", "source": {"type": "dir", "path": "/x"}}]},
     "sparkfleet_models[0] (a).port", "model_store_rsync_port"),
    # The NCCL builder's rsync daemon (nccl role's default port, built once by default): the API may not take it.
    ({"sparkfleet_models": [{"name": "a", "model": "m",
                             "port": fp.fabric_firewall.load_role_default("nccl", "nccl_rsync_port")}]},
     "sparkfleet_models[0] (a).port", "nccl_rsync_port"),
    ({"nccl_rsync_port": 8000, "sparkfleet_models": [{"name": "a", "model": "m"}]},
     "sparkfleet_models[0] (a).port", "nccl_rsync_port"),
])
def test_firewall_values_are_refused_naming_host_variable_value(host_vars, variable, words):
    findings = fp.check_firewall({"s1": dict(host_vars, group_names=["sparks"])})
    assert [f.variable for f in findings] == [variable]
    assert words in str(findings[0]) and str(findings[0]).startswith("s1: ")


def test_nccl_rsync_port_is_free_for_the_api_when_every_host_builds():
    port = fp.fabric_firewall.load_role_default("nccl", "nccl_rsync_port")
    for off in (False, "false", "no"):
        assert fp.check_firewall({"s1": {"group_names": ["sparks"], "nccl_build_once": off,
                                         "sparkfleet_models": [{"name": "a", "model": "m", "port": port}]}}) == []


def test_good_firewall_values_give_nothing():
    host_vars = {"group_names": ["sparks", "ray_head"], "fabric_firewall_api_sources": ["10.0.0.0/24", "2001:db8::/48"],
                 "fabric_firewall_extra_internal_ports": [9000, "9100-9110"],
                 "sparkfleet_models": [{"name": "a", "model": "m", "port": 8000, "nodes": ["s1", "s2"]}]}
    assert fp.check_firewall({"s1": host_vars}) == []


def _gb10(netdevs, management=None):
    return {"netdevs": dict((n, {"mtu": 9000, "ipv4": []}) for n in netdevs), "driver": {},
            "management": {"devs": management or [], "ipv4": None}}


@pytest.mark.parametrize("ifname, words", [
    ("enp1s0f1np2", ["not a QSFP netdev", "('enp1s0f1np1'?)"]),
    ("enP7s7", ["not a QSFP netdev", "it is the management port"]),
])
def test_a_wrong_fabric_interface_blames_the_interface_variable(ifname, words):
    fleet = {"spark-1": {"sparkfleet_fabric_ifname": ifname, "sparkfleet_fabric_address": "192.168.100.10",
                         "ansible_facts": {"gb10": _gb10(["enp1s0f0np0", "enp1s0f1np1"], ["enP7s7"])}}}
    [finding] = fp.check_host_facts(fleet, ["590"], lambda *a: None)
    assert (finding.host, finding.variable, finding.value) == ("spark-1", "sparkfleet_fabric_ifname", ifname)
    assert all(w in str(finding) for w in words), str(finding)
    assert "socket_fallback" not in str(finding)


def test_the_right_fabric_interface_gives_no_finding():
    fleet = {"spark-1": {"sparkfleet_fabric_ifname": "enp1s0f1np1",
                         "ansible_facts": {"gb10": _gb10(["enp1s0f0np0", "enp1s0f1np1"], ["enP7s7"])}}}
    assert fp.check_host_facts(fleet, ["590"], lambda *a: None) == []


@pytest.mark.parametrize("host_vars, variable", [
    ({"sparkfleet_model_store_dir": "models"}, "sparkfleet_model_store_dir"),
    ({"ansible_user": "admin", "sparkfleet_service_user": "admin"}, "sparkfleet_service_user"),
    ({"ansible_user": "admin", "vllm_service_user": "root"}, "vllm_service_user"),
])
def test_fleet_variables_refused_before_their_role_runs(host_vars, variable):
    [finding] = fp.check_fleet_variables({"spark-1": host_vars})
    assert (finding.host, finding.variable) == ("spark-1", variable)


@pytest.mark.parametrize("host_vars", [{"sparkfleet_venv_path": "/srv/venv"}, {},
                                       {"ansible_user": "admin", "sparkfleet_service_user": "vllm"}])
def test_fleet_variables_as_the_rule_book_wants_pass(host_vars):
    assert fp.check_fleet_variables({"spark-1": host_vars}) == []


def test_node_exporter_port_is_the_roles_default():
    import yaml
    from ansible_collections.sparkfleet.gb10.plugins.action.fleet_preflight import fleet_checks
    with open(os.path.join(os.path.dirname(fp.__file__), "..", "..", "roles", "fleet_health", "defaults",
                           "main.yml")) as handle:
        assert yaml.safe_load(handle)["fleet_health_node_exporter_port"] == fleet_checks()["node_exporter_port"]


def test_a_fabric_subnet_holding_the_management_address_is_refused():
    fleet = {"spark-1": {"sparkfleet_fabric_address": "10.0.0.50", "sparkfleet_fabric_subnet": "10.0.0.0/16",
                         "ansible_facts": {"gb10": {"management": {"devs": ["enP7s7"], "ipv4": "10.0.3.7"}}}}}
    [finding] = fp.check_fabric(fleet)
    assert finding.variable == "sparkfleet_fabric_subnet" and "management address 10.0.3.7 (enP7s7)" in str(finding)


def test_overlapping_fabric_subnets_of_two_hosts_are_refused():
    fleet = {"spark-1": {"sparkfleet_fabric_address": "192.168.100.10", "sparkfleet_fabric_subnet": "192.168.100.0/24"},
             "spark-2": {"sparkfleet_fabric_address": "192.168.100.11", "sparkfleet_fabric_subnet": "192.168.0.0/16"}}
    [finding] = fp.check_fabric(fleet)
    assert finding.host == "spark-1, spark-2" and "overlapping fabric subnets" in str(finding)
    fleet["spark-2"]["sparkfleet_fabric_subnet"] = "192.168.100.0/24"
    assert fp.check_fabric(fleet) == []


# The fabric's MTU and the firewall's timeouts are role settings (plugins/module_utils/role_settings.py), judged
# with the role's defaults where the inventory says nothing.
@pytest.mark.parametrize("host_vars, variable", [
    ({"qsfp_network_mtu": 1500}, "qsfp_network_mtu"),
    ({"qsfp_network_mtu": "8000"}, "qsfp_network_mtu"),
    ({"fabric_firewall_confirm_timeout": 115}, "fabric_firewall_confirm_timeout"),
    ({"fabric_firewall_revert_timeout": 65}, "fabric_firewall_confirm_timeout"),
])
def test_role_settings_refused_before_their_role_runs(host_vars, variable):
    [finding] = fp.check_role_settings({"spark-1": host_vars})
    assert (finding.host, finding.variable) == ("spark-1", variable)


@pytest.mark.parametrize("host_vars", [{"qsfp_network_mtu": 9000}, {"qsfp_network_mtu": "9000"}, {},
                                       {"fabric_firewall_confirm_timeout": 20, "fabric_firewall_revert_timeout": 40}])
def test_role_settings_as_the_rule_book_wants_pass(host_vars):
    assert fp.check_role_settings({"spark-1": host_vars}) == []


# ----------------------------------------------------------- the API's bind address
def _api_host(bind, facts=True):
    host_vars = _host("192.168.100.10", [{"name": "m", "model": "org/m", "host": bind}])
    host_vars["ansible_host"] = "203.0.113.7"  # a bastion's address: not one the host holds
    if facts:
        # a secondary (tailnet) address too; the fabric address is not up yet
        host_vars["ansible_facts"] = {"gb10": dict(GB10, ipv4_addresses=["127.0.0.1", "192.168.1.11", "10.1.0.11"])}
    return {"a": host_vars}


@pytest.mark.parametrize("bind", ["0.0.0.0", "::", "127.0.0.1", "192.168.1.11", "10.1.0.11"])
def test_an_api_bound_to_an_address_of_the_host_passes(bind):
    assert fp.check_api_addresses(_api_host(bind)) == []


@pytest.mark.parametrize("bind,words", [("192.168.100.11", "no address of this host"),
                                        ("203.0.113.7", "no address of this host"),
                                        ("spark-1.lan", "no IPv4 address")])
def test_an_api_bound_where_the_host_cannot_bind_is_refused(bind, words):
    found = fp.check_api_addresses(_api_host(bind))
    assert [(f.host, f.variable, f.value) for f in found] == [("a", "sparkfleet_models[0] (m).host", bind)]
    assert words in found[0].problem and "192.168.1.11" in found[0].fix


def test_without_facts_an_unknown_address_is_left_to_the_host():
    assert fp.check_api_addresses(_api_host("10.1.0.99", facts=False)) == []
    # an address of the fabric subnet is one only the fabric reaches, whoever holds it
    assert [f.variable for f in fp.check_api_addresses(_api_host("192.168.100.11", facts=False))] == \
        ["sparkfleet_models[0] (m).host"]


def test_the_gates_call_an_api_where_it_binds():
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan
    assert [fleet_plan.call_address(h) for h in (None, "0.0.0.0", "::", "", "192.168.100.10", "127.0.0.1")] == \
        ["127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1", "192.168.100.10", "127.0.0.1"]
    plan = fleet_plan.build({"a": {"group_names": ["sparks"], "sparkfleet_fabric_address": "192.168.100.10",
                                   "sparkfleet_models": [{"name": "m", "model": "org/m", "host": "192.168.100.10"}]}})
    assert [e["call_address"] for e in fleet_plan.host_view(plan, "a")["endpoints"]] == ["192.168.100.10"]


# ----------------------------------------------------------- declared weights against the host's share
def _weights_fleet(entry, gb10=None):
    return {"a": dict(_host("192.168.100.10", [dict({"name": "big", "model": "org/big"}, **entry)]),
                      ansible_facts={"gb10": GB10 if gb10 is None else gb10})}


def test_weights_larger_than_the_share_are_refused_without_the_sizing_keys():
    """70B parameters in BF16 (130 GiB) on one Spark: no KV arithmetic without num_layers, but the weights alone
    exceed 0.87 of its memory."""
    found = _models(_weights_fleet({"checkpoint_format": "bf16", "params_b": 70}))
    assert [(f.variable, f.value) for f in found] == [("sparkfleet_models[0] (big).gpu_memory_utilization", 0.87)]
    assert "its weights, 130.4 GiB, and 3.0 GiB of overhead need 133.4 GiB" in found[0].problem
    assert "MemTotal 121.7 GiB gives 105.9 GiB" in found[0].problem


def test_the_share_is_the_nodes_and_cuda_total_decides():
    assert _models({"a": dict(_weights_fleet({"checkpoint_format": "fp8", "params_b": 70})["a"])}) == []
    cuda = dict(GB10, memory=dict(GB10["memory"], cuda_total_bytes=62 * 2 ** 30))
    found = _models(_weights_fleet({"checkpoint_format": "fp8", "params_b": 70}, cuda))
    assert len(found) == 1 and "CUDA total 62.0 GiB" in found[0].problem


def test_a_model_over_several_sparks_binds_every_address():
    """The followers' head watch calls the head at its fabric address, the clients at a LAN one: only every address
    serves both (the fabric address alone: tests/unit/plugins/module_utils/test_preflight_readers.py)."""
    for bind, refused in (("0.0.0.0", False), ("127.0.0.1", True), ("192.168.1.11", True)):
        fleet = _api_host(bind)
        fleet["a"]["sparkfleet_models"][0]["nodes"] = ["a", "b"]
        found = fp.check_api_addresses(fleet)
        assert bool(found) == refused, (bind, found)
        if refused:
            assert "fabric address 192.168.100.10" in found[0].problem and "restart over and over" in found[0].problem
