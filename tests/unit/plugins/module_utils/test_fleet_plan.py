# -*- coding: utf-8 -*-
"""The fleet plan (plugins/module_utils/fleet_plan.py) of every example inventory, of the valid but
unusual ones preflight runs (tests/preflight/valid) and of the broken ones (tests/preflight/cases),
read through Ansible's own inventory and variable managers; and the filters in front of it."""

from __future__ import annotations

import glob
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.action.fleet_preflight import fleet_checks
from ansible_collections.sparkfleet.gb10.plugins.filter import fleet_host as host_filter
from ansible_collections.sparkfleet.gb10.plugins.filter import fleet_plan as plan_filter
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as pre

from inventory_loader import load_fleet

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
NAMES = fp.PLAN_INPUTS + ("sparkfleet_ray_head_host", "sparkfleet_fabric_subnet")
GCS_DEFAULT = fp.default_ray_ports("ray_head")["gcs"]
CHECKS = fleet_checks(os.path.join(TOP, "roles"))
ROLE_SPECS = pre.load_role_specs(os.path.join(TOP, "roles"))
_LOADED = {}


# What an example's comments ask a user to write before a run (its model revisions), as tests/preflight runs them.
EXAMPLE_INPUTS = os.path.join(TOP, "tests", "preflight", "example_inputs.yml")


def fleet_of(source):
    if source not in _LOADED:
        inputs = [EXAMPLE_INPUTS] if source.startswith("inventories/") else []
        _LOADED[source] = load_fleet(os.path.join(TOP, source), NAMES, inputs)
    return _LOADED[source]


def summary(plan):
    """The plan in a few words: multi-node models, Ray clusters, each host's services."""
    return {
        "models": [(m["name"], m["nodes"], m["executor"], m["master_addr"], m["master_port"], m["port"])
                   for m in plan["models"]],
        "ray": dict((name, (ray["head"], ray["workers"], ray["gcs_port"], ray["address"]))
                    for name, ray in plan["ray"].items()),
        "services": dict((host, [(s["name"], s["unit"], s["port"], s["rank"], s["role"]) for s in view["services"]])
                         for host, view in plan["hosts"].items()),
    }


# What each inventory's plan must be: written out here, not derived, so a change of the plan shows.
EXPECTED = {
    "inventories/two-spark": {
        "models": [("qwen3-235b", ["spark-1", "spark-2"], "ray", "192.168.100.10", 29501, 8000)],
        "ray": {"two-spark": ("spark-1", ["spark-2"], GCS_DEFAULT, "192.168.100.10:%d" % GCS_DEFAULT)},
        "services": {"spark-1": [("qwen3-235b", "sparkfleet-vllm-qwen3-235b", 8000, 0, "head")],
                     "spark-2": []},  # a follower of the ray executor runs inside its Ray worker
    },
    "inventories/three-spark": {
        "models": [("llama-405b", ["spark-1", "spark-2", "spark-3"], "ray", "192.168.100.10", 29501, 8000)],
        "ray": {"three-spark": ("spark-1", ["spark-2", "spark-3"], GCS_DEFAULT, "192.168.100.10:%d" % GCS_DEFAULT)},
        "services": {"spark-1": [("llama-405b", "sparkfleet-vllm-llama-405b", 8000, 0, "head")],
                     "spark-2": [], "spark-3": []},
    },
    "inventories/dual-independent": {
        "models": [], "ray": {},
        "services": {"spark-1": [("qwen36-35b", "sparkfleet-vllm-qwen36-35b", 8001, 0, "head")],
                     "spark-2": [("qwen3-30b", "sparkfleet-vllm-qwen3-30b", 8001, 0, "head")]},
    },
    "inventories/single-spark": {
        "models": [], "ray": {},
        "services": {"spark-1": [("gpt-oss-120b", "sparkfleet-vllm-gpt-oss-120b", 8000, 0, "head")]},
    },
    "inventories/sim": {
        "models": [("tiny-tp", ["spark-1", "spark-2"], "mp", "192.168.100.10", 29501, 8000)],
        "ray": {"sim": ("spark-1", ["spark-2"], GCS_DEFAULT, "192.168.100.10:%d" % GCS_DEFAULT)},
        "services": {"spark-1": [("tiny-tp", "sparkfleet-vllm-tiny-tp", 8000, 0, "head")],
                     "spark-2": [("tiny-tp", "sparkfleet-vllm-tiny-tp", 8000, 1, "follower")]},
    },
    # The simulated fleet laid out as independent hosts (make chaos rolls one of them under load).
    "inventories/sim-independent": {
        "models": [], "ray": {},
        "services": {"spark-1": [("tiny-a", "sparkfleet-vllm-tiny-a", 8000, 0, "head")],
                     "spark-2": [("tiny-b", "sparkfleet-vllm-tiny-b", 8000, 0, "head")]},
    },
    "tests/preflight/valid/eight_mixed": {
        "models": [("qwen35-122b", ["spark-1", "spark-2"], "mp", "192.168.100.11", 29501, 8000),
                   ("llama-405b", ["spark-3", "spark-4", "spark-5", "spark-6"], "ray", "192.168.100.13", 29501, 8000)],
        "ray": {"ray-pp4": ("spark-3", ["spark-4", "spark-5", "spark-6"], GCS_DEFAULT,
                            "192.168.100.13:%d" % GCS_DEFAULT)},
        "services": {"spark-1": [("qwen35-122b", "sparkfleet-vllm-qwen35-122b", 8000, 0, "head")],
                     "spark-2": [("qwen35-122b", "sparkfleet-vllm-qwen35-122b", 8000, 1, "follower"),
                                 ("nemotron-9b", "sparkfleet-vllm-nemotron-9b", 8000, 0, "head")],
                     "spark-3": [("llama-405b", "sparkfleet-vllm-llama-405b", 8000, 0, "head")],
                     "spark-4": [], "spark-5": [], "spark-6": [],
                     "spark-7": [("qwen3-30b", "sparkfleet-vllm-qwen3-30b", 8000, 0, "head")],
                     "spark-8": [("gemma3-12b", "sparkfleet-vllm-gemma3-12b", 8000, 0, "head"),
                                 ("nemotron-9b", "sparkfleet-vllm-nemotron-9b", 8001, 0, "head")]},
    },
    "tests/preflight/valid/host_vars_only": {
        "models": [("gpt-oss-120b", ["spark-1", "spark-2"], "mp", "192.168.100.10", 29501, 8000)], "ray": {},
        "services": {"spark-1": [("gpt-oss-120b", "sparkfleet-vllm-gpt-oss-120b", 8000, 0, "head")],
                     "spark-2": [("gpt-oss-120b", "sparkfleet-vllm-gpt-oss-120b", 8000, 1, "follower")],
                     "spark-3": [("gemma3-12b", "sparkfleet-vllm-gemma3-12b", 8000, 0, "head"),
                                 ("nemotron-9b", "sparkfleet-vllm-nemotron-9b", 8001, 0, "head")],
                     "spark-4": [("qwen3-8b", "sparkfleet-vllm-qwen3-8b", 8080, 0, "head")]},
    },
    "tests/preflight/valid/ini_inventory": {
        "models": [("qwen35-122b", ["spark-1", "spark-2"], "mp", "192.168.100.10", 29501, 8000)], "ray": {},
        "services": {"spark-1": [("qwen35-122b", "sparkfleet-vllm-qwen35-122b", 8000, 0, "head")],
                     "spark-2": [("qwen35-122b", "sparkfleet-vllm-qwen35-122b", 8000, 1, "follower")],
                     "spark-3": [("qwen3-30b", "sparkfleet-vllm-qwen3-30b", 8000, 0, "head")]},
    },
    # The inventory moves Ray's ports on the head (and a model onto the freed 6379): the GCS port of the
    # cluster, which the workers join, moves with them.
    "tests/preflight/valid/ray_ports_overridden": {
        "models": [("llama-70b", ["spark-1", "spark-2"], "ray", "192.168.100.10", 29501, 8000)],
        "ray": {"default": ("spark-1", ["spark-2"], 6400, "192.168.100.10:6400")},
        "services": {"spark-1": [("qwen3-8b", "sparkfleet-vllm-qwen3-8b", 6379, 0, "head"),
                                 ("llama-70b", "sparkfleet-vllm-llama-70b", 8000, 0, "head")],
                     "spark-2": []},
    },
    # Two Ray clusters: each has its own head, members and address; verify and the health probe count a
    # cluster's members from here, not every host of groups ray_head and ray_workers.
    "tests/preflight/valid/two_ray_clusters": {
        "models": [("llama-70b", ["spark-1", "spark-2"], "ray", "192.168.100.11", 29501, 8000),
                   ("qwen3-235b", ["spark-3", "spark-4"], "ray", "192.168.100.13", 29501, 8000)],
        "ray": {"ray-a": ("spark-1", ["spark-2"], GCS_DEFAULT, "192.168.100.11:%d" % GCS_DEFAULT),
                "ray-b": ("spark-3", ["spark-4"], GCS_DEFAULT, "192.168.100.13:%d" % GCS_DEFAULT)},
        "services": {"spark-1": [("llama-70b", "sparkfleet-vllm-llama-70b", 8000, 0, "head")], "spark-2": [],
                     "spark-3": [("qwen3-235b", "sparkfleet-vllm-qwen3-235b", 8000, 0, "head")], "spark-4": []},
    },
    # The Ray head serves no node of the ray-executor model on its workers (the model still needs it: TOGETHER).
    "tests/preflight/valid/ray_head_apart": {
        "models": [("qwen35-122b", ["spark-2", "spark-3"], "ray", "192.168.100.12", 29501, 8000)],
        "ray": {"default": ("spark-1", ["spark-2", "spark-3"], GCS_DEFAULT, "192.168.100.11:%d" % GCS_DEFAULT)},
        "services": {"spark-1": [("qwen3-30b", "sparkfleet-vllm-qwen3-30b", 8000, 0, "head")],
                     "spark-2": [("qwen35-122b", "sparkfleet-vllm-qwen35-122b", 8000, 0, "head")],
                     "spark-3": []},
    },
}

# Only the GCS port named in inventory, merged over the role's default key by key: the same plan as the whole
# map of ray_ports_overridden (the cluster's GCS port moves to 6400, the head's model takes 6379).
EXPECTED["tests/preflight/valid/ray_gcs_port_moved"] = EXPECTED["tests/preflight/valid/ray_ports_overridden"]


def test_every_inventory_has_its_expected_plan():
    sources = sorted(os.path.relpath(p, TOP) for p in glob.glob(os.path.join(TOP, "inventories", "*"))
                     + glob.glob(os.path.join(TOP, "tests", "preflight", "valid", "*")))
    assert sorted(EXPECTED) == sources, "a new inventory needs its plan written into EXPECTED"


@pytest.mark.parametrize("source", sorted(EXPECTED))
def test_plan_of_each_valid_inventory(source):
    fleet = fleet_of(source)
    plan = fp.build(fleet)
    assert summary(plan) == EXPECTED[source]
    for host, view in plan["hosts"].items():
        for service in view["services"]:
            # The layout vllm_args renders: rank, node count and (multi-node) the first node's address.
            assert service["cluster"]["node_rank"] == service["nodes"].index(host) == service["rank"]
            assert service["cluster"]["nnodes"] == len(service["nodes"])
            if service["nnodes"] > 1:
                assert service["cluster"]["master_addr"] == fleet[service["head"]]["sparkfleet_fabric_address"]
            assert not set(fp.PLACEMENT_KEYS + ("source",)) & set(service["entry"])
    # What preflight accepts is what the roles do: its plan check finds nothing, and the plan it judges
    # (and stores) is this one, built once.
    assert pre.check_plan(fleet) == []
    judged, findings = pre.judge_fleet(fleet, ROLE_SPECS, CHECKS)
    assert findings == []
    # Each host's memory arithmetic is part of the one plan: null here, the inventory alone has no facts.
    assert [view["memory"] for view in judged["hosts"].values()] == [None] * len(plan["hosts"])
    assert judged == plan


# The models a host holds (needs the weights of) beyond its services: the followers of the ray executor,
# which run no unit and load their share inside the Ray worker. Elsewhere a host holds what it serves.
RAY_FOLLOWERS = {
    "inventories/two-spark": {"spark-2": [("qwen3-235b", 1)]},
    "inventories/three-spark": {"spark-2": [("llama-405b", 1)], "spark-3": [("llama-405b", 2)]},
    "tests/preflight/valid/eight_mixed": {"spark-4": [("llama-405b", 1)], "spark-5": [("llama-405b", 2)],
                                          "spark-6": [("llama-405b", 3)]},
    "tests/preflight/valid/ray_ports_overridden": {"spark-2": [("llama-70b", 1)]},
    "tests/preflight/valid/ray_gcs_port_moved": {"spark-2": [("llama-70b", 1)]},
    "tests/preflight/valid/two_ray_clusters": {"spark-2": [("llama-70b", 1)], "spark-4": [("qwen3-235b", 1)]},
    "tests/preflight/valid/ray_head_apart": {"spark-3": [("qwen35-122b", 1)]},
}


@pytest.mark.parametrize("source", sorted(EXPECTED))
def test_each_host_holds_the_models_it_is_a_node_of(source):
    fleet = fleet_of(source)
    plan = fp.build(fleet)
    for host, view in plan["hosts"].items():
        held = [(m["name"], m["rank"]) for m in view["models"]]
        assert [h for h, m in zip(held, view["models"]) if m["runs_unit"]] == [
            (s["name"], s["rank"]) for s in view["services"]]
        assert [h for h, m in zip(held, view["models"]) if not m["runs_unit"]] == (
            RAY_FOLLOWERS.get(source, {}).get(host, []))
        for m in view["models"]:
            assert host in m["nodes"] and m["role"] == ("head" if m["rank"] == 0 else "follower")
            assert fp.host_models(fleet[host])[m["index"]] is m["model"]
            assert not set(fp.PLACEMENT_KEYS + ("source",)) & set(m["entry"])


def test_a_host_holds_no_entry_it_is_not_a_node_of():
    """An entry that group_vars give every host belongs to its nodes only (the model store sends it to them)."""
    shared = [{"name": "tp", "nodes": ["b", "c"]}, {"name": "solo"}, {"name": "empty", "nodes": []}]
    assert [(m["name"], m["nodes"]) for m in fp.placements("a", shared)] == [("solo", ["a"]), ("empty", ["a"])]
    assert [(m["name"], m["index"], m["rank"]) for m in fp.placements("c", shared)] == [
        ("tp", 0, 1), ("solo", 1, 0), ("empty", 2, 0)]
    plan = fp.build({h: {"sparkfleet_models": shared} for h in ("a", "b", "c")})
    assert [m["name"] for m in plan["hosts"]["a"]["models"]] == ["solo", "empty"]


def test_a_role_s_own_models_variable_stands_for_the_served_list():
    hostvars = {"a": {"sparkfleet_models": [{"name": "served"}], "model_store_models": [{"name": "stored"}]},
                "b": {"sparkfleet_models": [{"name": "served"}]}}
    plan = plan_filter.fleet_plan(hostvars, ["a", "b"], models_var="model_store_models")
    assert [m["name"] for m in plan["hosts"]["a"]["models"]] == ["stored"]
    assert [m["name"] for m in plan["hosts"]["b"]["models"]] == ["served"]
    plan = plan_filter.fleet_plan(hostvars, ["a", "b"])
    assert [m["name"] for m in plan["hosts"]["a"]["models"]] == ["served"]
    # The run's one plan carries the store's own list as the host's store; the services stay the served ones.
    plan = fp.build(dict((h, fp.plan_inputs(v)) for h, v in hostvars.items()))
    assert [m["name"] for m in plan["hosts"]["a"]["models"]] == ["served"]
    assert [m["name"] for m in host_filter.fleet_host("a", plan)["store"]] == ["stored"]
    assert [m["name"] for m in host_filter.fleet_host("b", plan)["store"]] == ["served"]
    assert "store" not in plan["hosts"]["b"]
    # A host that is not in hostvars is named by the planning.
    with pytest.raises(AnsibleFilterError, match="fleet_plan: .*nowhere"):
        plan_filter.fleet_plan(hostvars, ["a", "nowhere"], models_var="model_store_models")


@pytest.mark.parametrize("source", sorted(EXPECTED))
def test_each_host_s_view_is_its_part_of_the_plan(source):
    """fleet_host (what vllm_service, ray_worker, fleet_verify, fleet_health and the summary read): the host's
    services (with a role's own unit prefix and vLLM path), its endpoints, models, Ray role and Ray cluster, as
    the whole plan holds them."""
    fleet = fleet_of(source)
    plan = plan_filter.fleet_plan(fleet, sorted(fleet))
    for host, host_vars in fleet.items():
        view = host_filter.fleet_host(host, plan)
        assert view["services"] == plan["hosts"][host]["services"]
        assert view["services"] == plan_filter.fleet_services(fp.host_models(host_vars), host, fleet,
                                                              executor=fp.executor_var(host_vars))
        assert view["endpoints"] == [s for s in view["services"] if s["rank"] == 0]
        assert view["models"] == plan["hosts"][host]["models"]
        assert view["ray_role"] == fp.ray_role(host_vars.get("group_names"))
        name = plan["hosts"][host]["ray_cluster"]
        assert view["ray"] == (plan["ray"][name] if name else {})
        if name:
            assert view["ray"]["gcs_port"] == plan_filter.ray_gcs_port(view["ray"]["head"], fleet)
        ours = host_filter.fleet_host(host, plan, unit_prefix="u-", vllm_bin="/v/bin/vllm")["services"]
        assert ours == plan_filter.fleet_services(fp.host_models(host_vars), host, fleet, unit_prefix="u-",
                                                  vllm_bin="/v/bin/vllm", executor=fp.executor_var(host_vars))
        assert all(s["unit"].startswith("u-") and s["cluster"]["vllm_bin"] == "/v/bin/vllm" for s in ours)
        # The view is a copy: a reader that changes it does not change the stored plan.
        view["ray"]["head"] = "changed"
        assert (plan["ray"].get(name) or {}).get("head") != "changed"


def test_a_view_without_a_plan_names_the_fix():
    for nothing in (None, {}, {"hosts": {}}):
        with pytest.raises(AnsibleFilterError, match="no fleet plan: run playbooks/preflight.yml"):
            host_filter.fleet_host("a", nothing)
    plan = fp.build({"a": {}})
    with pytest.raises(AnsibleFilterError, match="b is not in the fleet plan .*sparkfleet.gb10.plan"):
        host_filter.fleet_host("b", plan)


def test_a_host_outside_the_ray_groups_joins_the_head_it_names():
    """A Ray role or the ray executor run on its own, outside groups ray_head/ray_workers (the Molecule cluster
    scenario): sparkfleet_ray_head_host names the head, and the plan gives its address and ports."""
    fleet = {"h": {"sparkfleet_fabric_address": "10.0.0.1", "sparkfleet_ray_head_host": "h",
                   "ray_head_ports": dict(fp.ray_ports("ray_head"), gcs=7000)},
             "w": {"sparkfleet_fabric_address": "10.0.0.2", "sparkfleet_ray_head_host": "h"},
             "x": {"sparkfleet_ray_head_host": "nowhere"}}
    plan = fp.build(fleet)
    worker = fp.host_view(plan, "w")["ray"]
    assert (worker["head"], worker["members"], worker["workers"], worker["address"]) == (
        "h", ["h", "w"], ["w"], "10.0.0.1:7000")
    assert worker["dashboard_port"] == fp.ray_ports("ray_head")["dashboard"]
    assert fp.host_view(plan, "h")["ray"]["workers"] == []
    assert fp.host_view(plan, "x")["ray"] == {} and fp.host_view(plan, "x")["ray_role"] is None
    # In a Ray group the group decides (preflight refuses a sparkfleet_ray_head_host naming another head).
    fleet["w"]["group_names"] = ["ray_workers"]
    fleet["h"]["group_names"] = ["ray_head"]
    assert "ray_head" not in fp.build(fleet)["hosts"]["w"]


def test_vllm_service_executor_is_read_where_the_inventory_sets_it():
    fleet = {"a": {"vllm_service_executor": "ray", "sparkfleet_executor": "mp", "sparkfleet_models": [{"name": "m"}]},
             "b": {"sparkfleet_executor": "ray", "sparkfleet_models": [{"name": "m"}]},
             "c": {"sparkfleet_models": [{"name": "m"}]}}
    plan = fp.build(fleet)
    assert [plan["hosts"][h]["services"][0]["executor"] for h in "abc"] == ["ray", "ray", fp.DEFAULT_EXECUTOR]


# Broken inventories (tests/preflight/cases) whose layout cannot be planned, with the words of the
# PlanError; preflight's own checks name each mistake first. The others can be planned (their mistakes
# are of values, not of the layout).
UNPLANNABLE = {
    "many_mistakes_at_once": "spans spark-1, spark-2 but spark-2 does not carry it",
    "member_missing_entry": "nodes spark-9 are not in the inventory",
    "named_by_the_users_variable": "Ray cluster 'lab' (spark-2, spark-3) needs exactly one host in group ray_head",
    "ray_heads_and_ports": "Ray cluster 'default' (spark-1, spark-2, spark-3) needs exactly one host in group ray_head",
}
CASES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(TOP, "tests", "preflight", "cases", "*")))


@pytest.mark.parametrize("case", CASES)
def test_plan_of_each_broken_inventory(case):
    fleet = fleet_of(os.path.join("tests", "preflight", "cases", case))
    if case not in UNPLANNABLE:
        plan = fp.build(fleet)
        assert sorted(plan["hosts"]) == sorted(fleet)
        return
    with pytest.raises(fp.PlanError, match=UNPLANNABLE[case].replace("(", r"\(").replace(")", r"\)")):
        fp.build(fleet)
    assert pre.check_plan(fleet), "check_plan must turn the PlanError into a finding"
    # The layout checks of preflight name the mistake themselves, with its fix.
    found = pre.check_cluster_layout(fleet, CHECKS["ray_defaults"]) + pre.check_models(
        fleet, CHECKS["entry_check"], CHECKS["gpu_memory_utilization"], CHECKS["utilization"])
    assert any(f.fix for f in found)


def test_unit_prefix_executor_and_address_fallback():
    models = [{"name": "m", "nodes": ["a", "b"], "port": 8100},
              {"name": "r", "nodes": ["b", "a"], "executor": "ray"},
              {"name": "solo"}]
    got = fp.services("a", models, executor="mp", address_of=lambda h: None, unit_prefix="u-", vllm_bin="/v/bin/vllm")
    assert [(s["name"], s["unit"], s["rank"], s["executor"]) for s in got] == [("m", "u-m", 0, "mp"),
                                                                               ("solo", "u-solo", 0, "mp")]
    assert got[0]["cluster"] == {"executor": "mp", "nnodes": 2, "node_rank": 0, "master_port": 29501,
                                 "master_addr": None, "vllm_bin": "/v/bin/vllm"}
    assert "master_addr" not in got[1]["cluster"]
    # The filter falls back to this host's address when the first node's is not known.
    got = plan_filter.fleet_services(models, "b", {"a": {}}, executor="mp", address="10.0.0.2")
    assert [(s["name"], s["rank"], s["master_addr"]) for s in got] == [("m", 1, "10.0.0.2"), ("r", 0, "10.0.0.2"),
                                                                       ("solo", 0, None)]
    got = plan_filter.fleet_services(models, "b", {"a": {"sparkfleet_fabric_address": "10.0.0.1"}})
    assert got[0]["master_addr"] == "10.0.0.1"


def test_unit_names_have_one_prefix():
    """vllm_service's default is the prefix's one home; an inventory's vllm_service_unit_prefix renames the
    plan's units, and a role that passes no prefix of its own (fleet_health) reads the plan's names."""
    assert fp.DEFAULT_UNIT_PREFIX == fp.load_role_default("vllm_service", "vllm_service_unit_prefix")
    entry = {"name": "m", "model": "x"}
    fleet = {"a": {"sparkfleet_models": [entry], "vllm_service_unit_prefix": "lab-vllm-"},
             "b": {"sparkfleet_models": [entry]}}
    plan = fp.build(fleet)
    assert [s["unit"] for s in plan["hosts"]["a"]["services"]] == ["lab-vllm-m"]
    assert [s["unit"] for s in plan["hosts"]["b"]["services"]] == [fp.DEFAULT_UNIT_PREFIX + "m"]
    for host, unit in (("a", "lab-vllm-m"), ("b", fp.DEFAULT_UNIT_PREFIX + "m")):
        # The stored plan's names, and the same planned from hostvars without it.
        assert [s["unit"] for s in host_filter.fleet_host(host, plan)["services"]] == [unit]
        assert [s["unit"] for s in plan_filter.fleet_services([entry], host, fleet)] == [unit]
        # A role's own prefix wins (vllm_service passes vllm_service_unit_prefix).
        assert [s["unit"] for s in host_filter.fleet_host(host, plan, unit_prefix="u-")["services"]] == ["u-m"]


@pytest.mark.parametrize("models, words", [
    ([{"name": "m", "nodes": "a"}], "nodes='a': must be a list"),
    (["just-a-name"], "a model entry must be a mapping"),
    ({"name": "m"}, "the model entries must be a list"),
])
def test_services_of_entries_that_cannot_be_planned(models, words):
    with pytest.raises(AnsibleFilterError, match=words):
        plan_filter.fleet_services(models, "a")


def test_the_gcs_port_has_one_home():
    assert fp.gcs_port({}) == GCS_DEFAULT
    assert fp.gcs_port({"ray_head_ports": dict(fp.ray_ports("ray_head"), gcs="7000")}) == 7000
    assert plan_filter.ray_gcs_port("h", {"h": {"ray_head_ports": {"gcs": 7001}}}) == 7001
    # Merged key by key: a map that moves another port keeps the default GCS port; a key that is no Ray port
    # is not merged (preflight refuses it, naming the key meant).
    assert plan_filter.ray_gcs_port("h", {"h": {"ray_head_ports": {"dashboard": 8265}}}) == GCS_DEFAULT
    assert fp.ray_ports("ray_head", {"ray_head_ports": {"gsc": 7002}}) == fp.ray_ports("ray_head")
    assert plan_filter.FilterModule().filters()["ray_ports"]({"gcs": 7003}, "ray_head") == dict(
        fp.ray_ports("ray_head"), gcs=7003)


def test_the_dashboard_port_has_one_home():
    # the ray_worker role's membership check and the plan read the head's map, not a copy of 8265
    default = fp.default_ray_ports("ray_head")["dashboard"]
    assert plan_filter.ray_head_port("h", {"h": {}}, "dashboard") == default
    assert plan_filter.ray_head_port("h", {"h": {"ray_head_ports": {"gcs": 1, "dashboard": "9265"}}}, "dashboard") == 9265
    assert plan_filter.ray_head_port("h", {"h": {"ray_head_ports": {"gcs": 7001}}}) == 7001
    assert plan_filter.ray_head_port("h", {"h": {"ray_head_ports": {"gcs": 7001}}}, "dashboard") == default
    with pytest.raises(AnsibleFilterError, match="no nonsense port"):
        plan_filter.ray_head_port("h", {"h": {}}, "nonsense")
    fleet = {"a": {"group_names": ["sparks", "ray_head"], "ray_head_ports": {"gcs": 7000, "dashboard": 9265}},
             "b": {"group_names": ["sparks", "ray_workers"]}}
    (cluster,) = list(fp.ray_clusters(fleet).values())
    assert (cluster["gcs_port"], cluster["dashboard_port"]) == (7000, 9265)


def test_preflight_adds_each_host_s_memory_arithmetic_to_the_plan():
    """The memory arithmetic in the stored plan is the gpu_memory_utilization filter's over the entries a host
    holds (a follower of the ray executor included: it loads its share inside the Ray worker); none where the
    facts were not gathered (a host outside --limit) or an entry has no size."""
    sized = {"model": "org/m", "checkpoint_format": "bf16", "max_model_len": 8192, "num_layers": 32,
             "num_kv_heads": 8, "head_dim": 128, "params_b": 8}
    shared = dict(sized, name="big", nodes=["a", "b"], executor="ray")
    facts = {"ansible_facts": {"gb10": {"memory": {"mem_total_bytes": 128 * 2 ** 30}}}}
    fleet = {"a": dict(facts, sparkfleet_models=[shared], group_names=["ray_head"]),
             "b": dict(facts, sparkfleet_models=[shared, dict(sized, name="small")], group_names=["ray_workers"]),
             "c": {"sparkfleet_models": [dict(sized, name="elsewhere")]},
             "d": dict(facts, sparkfleet_models=[{"name": "unsized"}])}
    calls = []

    def memory_split(gb10, entries, host):
        calls.append((host, [e["name"] for e in entries]))
        return {"host": host}

    inputs = dict((h, fp.plan_inputs(v)) for h, v in fleet.items())
    plan = fp.build(inputs, memory_split=memory_split)
    assert sorted(calls) == [("a", ["big"]), ("b", ["big", "small"])]
    assert [plan["hosts"][h]["memory"] for h in "abcd"] == [{"host": "a"}, {"host": "b"}, None, None]
    assert all("nodes" not in e and "executor" not in e for dummy, entries in calls for e in entries)
    # With the real split (the plan's default): what the demo report shows.
    real = fp.build(inputs)
    assert sorted(real["hosts"]["b"]["memory"]["services"]) == ["big", "small"]

    # Entries that do not fit: the plan cannot be built, and preflight names the host and its models.
    def too_big(gb10, entries, host):
        raise ValueError("host %s: the models need more than MemTotal" % host)

    with pytest.raises(fp.MemoryPlanError) as raised:
        fp.build(inputs, memory_split=too_big)
    assert [(host, names) for host, names, dummy in raised.value.problems] == [("a", ["big"]), ("b", ["big", "small"])]
    plan, found = pre.build_plan(inputs, memory_split=too_big)
    assert plan is None
    assert [(f.host, f.variable, f.value) for f in found] == [("a", "sparkfleet_models", ["big"]),
                                                              ("b", "sparkfleet_models", ["big", "small"])]


def test_two_models_on_one_spark_run_with_the_shares_preflight_computed():
    """Two sized models on one host without a gpu_memory_utilization of their own: the units get the shares of
    the memory arithmetic (together within the 0.87 budget), not the rule book's 0.87 each; a value the
    inventory gave is kept."""
    from ansible_collections.sparkfleet.gb10.plugins.filter.vllm_args import check_entry

    sized = {"model": "org/m", "checkpoint_format": "bf16", "max_model_len": 8192, "num_layers": 32,
             "num_kv_heads": 8, "head_dim": 128, "params_b": 8}
    gb10 = {"memory": {"mem_total_bytes": 128 * 2 ** 30}}
    models = [dict(sized, name="big", params_b=20), dict(sized, name="small", port=8001),
              dict(sized, name="fixed", port=8002, gpu_memory_utilization=0.2)]
    fleet = {"a": {"ansible_facts": {"gb10": gb10}, "sparkfleet_models": models}}
    plan = fp.build(dict((h, fp.plan_inputs(v)) for h, v in fleet.items()))
    services = host_filter.fleet_host("a", plan)["services"]
    argv = dict((s["name"], check_entry(s["entry"], gb10, s["cluster"])[0]) for s in services)
    used = dict((name, float(args[args.index("--gpu-memory-utilization") + 1])) for name, args in argv.items())
    shares = plan["hosts"]["a"]["memory"]["services"]
    assert used == dict((name, shares[name]["utilization"]) for name in used)
    assert used["fixed"] == 0.2 and used["big"] > used["small"] > 0
    assert sum(used.values()) <= 0.87
    assert [m["entry"].get("gpu_memory_utilization") for m in plan["hosts"]["a"]["models"]] == \
        [used["big"], used["small"], 0.2]


def test_each_service_says_the_name_clients_ask_for():
    models = [{"name": "a", "model": "org/a"}, {"name": "b", "model": "org/b", "served_name": "bee"}]
    assert [(s["name"], s["served_name"]) for s in fp.services("h", models)] == [("a", "org/a"), ("b", "bee")]
    # The stored plan keeps it for the roles (fleet_verify asks /v1/models for it).
    plan = plan_filter.fleet_plan({"h": {"sparkfleet_models": models}}, ["h"])
    assert [s["served_name"] for s in host_filter.fleet_host("h", plan)["services"]] == ["org/a", "bee"]


def test_ray_cluster_of_each_host():
    """The filter ray_cluster (a test's expectation): each host's own cluster planned from hostvars, and nothing
    for a host in no Ray group."""
    fleet = fleet_of("tests/preflight/valid/two_ray_clusters")
    plan = fp.build(fleet)
    for host, name in (("spark-1", "ray-a"), ("spark-2", "ray-a"), ("spark-3", "ray-b"), ("spark-4", "ray-b")):
        assert plan_filter.ray_cluster(host, fleet, sorted(fleet)) == plan["ray"][name]
        assert host_filter.fleet_host(host, plan)["ray"] == plan["ray"][name]
    assert plan_filter.ray_cluster("spark-3", fleet, sorted(fleet))["members"] == ["spark-3", "spark-4"]
    single = fleet_of("inventories/single-spark")
    assert plan_filter.ray_cluster(sorted(single)[0], single, sorted(single)) == {}


def test_ray_cluster_is_not_failed_by_models_outside_the_ray_groups():
    """Without a stored plan (a role run on its own) only the Ray groups are read: a model whose nodes are not
    among the hosts asked for does not fail the head's cluster."""
    fleet = {"h": {"group_names": ["ray_head"], "sparkfleet_fabric_address": "10.0.0.1",
                   "sparkfleet_models": [{"name": "m", "model": "x", "nodes": ["h", "elsewhere"]}]},
             "w": {"group_names": ["ray_workers"]}}
    got = plan_filter.ray_cluster("w", fleet, ["h", "w"])
    assert (got["head"], got["members"], got["address"]) == ("h", ["h", "w"], "10.0.0.1:%d" % GCS_DEFAULT)
    with pytest.raises(AnsibleFilterError, match="ghost not in hostvars"):
        plan_filter.ray_cluster("w", fleet, ["h", "w", "ghost"])


def test_a_multi_node_model_knows_each_node_at_its_fabric_address():
    # Where a head asks its members to drop their page cache (rule members_drop_page_cache), in the order of nodes;
    # a ray follower, which runs no unit, holds the same list in its placement.
    plan = fp.build(fleet_of("inventories/two-spark"))
    head = plan["hosts"]["spark-1"]["services"][0]
    assert head["node_addresses"] == ["192.168.100.10", "192.168.100.11"]
    follower = plan["hosts"]["spark-2"]["models"][0]
    assert follower["rank"] == 1 and follower["node_addresses"] == head["node_addresses"]
    single = fp.build(fleet_of("inventories/dual-independent"))["hosts"]["spark-1"]["services"][0]
    assert single["node_addresses"] is None
    # A plan stored before node_addresses is not taken for this one (planned again).
    assert plan["format"] == fp.PLAN_FORMAT and not fp.covers(dict(plan, format=2), ["spark-1", "spark-2"])


def test_a_stored_plan_is_confirmed_only_for_the_variables_it_was_built_from():
    """stored_plan confirms a plan only while the hosts' layout variables are the ones it was built from: a play
    that sets a host's models with set_fact after the plan was stored gets a new plan, not the stale one; a
    refreshed fact does not count."""
    inputs = {"a": {"sparkfleet_models": [{"name": "m"}], "gb10": {"memory": {"mem_total_bytes": 1}}}}
    plan = fp.build(inputs)
    assert fp.covers(plan, ["a"], fp.inputs_digest(inputs))
    refreshed = {"a": dict(inputs["a"], gb10={"memory": {"mem_total_bytes": 2}}, unrelated="x")}
    assert fp.covers(plan, ["a"], fp.inputs_digest(refreshed))
    moved = {"a": dict(inputs["a"], sparkfleet_models=[{"name": "m"}, {"name": "n", "port": 8001}])}
    assert not fp.covers(plan, ["a"], fp.inputs_digest(moved))


# What each multi-node model needs beyond its nodes in a roll: (name, ray_head, together). The ray executor runs
# on the Ray cluster of the model's first node, whose head holds the GCS its nodes join; where that head is none of
# the model's nodes (ray_head_apart) it must change with them all the same. An mp model needs its nodes alone.
TOGETHER = {
    "inventories/two-spark": [("qwen3-235b", "spark-1", ["spark-1", "spark-2"])],
    "inventories/three-spark": [("llama-405b", "spark-1", ["spark-1", "spark-2", "spark-3"])],
    "inventories/sim": [("tiny-tp", None, ["spark-1", "spark-2"])],
    "tests/preflight/valid/eight_mixed": [("qwen35-122b", None, ["spark-1", "spark-2"]),
                                          ("llama-405b", "spark-3", ["spark-3", "spark-4", "spark-5", "spark-6"])],
    "tests/preflight/valid/host_vars_only": [("gpt-oss-120b", None, ["spark-1", "spark-2"])],
    "tests/preflight/valid/ini_inventory": [("qwen35-122b", None, ["spark-1", "spark-2"])],
    "tests/preflight/valid/ray_ports_overridden": [("llama-70b", "spark-1", ["spark-1", "spark-2"])],
    "tests/preflight/valid/ray_gcs_port_moved": [("llama-70b", "spark-1", ["spark-1", "spark-2"])],
    "tests/preflight/valid/two_ray_clusters": [("llama-70b", "spark-1", ["spark-1", "spark-2"]),
                                               ("qwen3-235b", "spark-3", ["spark-3", "spark-4"])],
    "tests/preflight/valid/ray_head_apart": [("qwen35-122b", "spark-1", ["spark-2", "spark-3", "spark-1"])],
}
# The default batch of a roll (the largest group that must change together; one without multi-node models).
ROLL_SERIAL = {"inventories/three-spark": 3, "tests/preflight/valid/eight_mixed": 4,
               "tests/preflight/valid/ray_head_apart": 3, "inventories/dual-independent": 1,
               "inventories/single-spark": 1, "inventories/sim-independent": 1}


@pytest.mark.parametrize("source", sorted(EXPECTED))
def test_each_multi_node_model_names_the_hosts_that_change_with_it(source):
    plan = fp.build(fleet_of(source))
    assert [(m["name"], m["ray_head"], m["together"]) for m in plan["models"]] == TOGETHER.get(source, [])
    for model in plan["models"]:
        assert model["together"][:len(model["nodes"])] == model["nodes"]
    assert fp.roll_serial(plan) == ROLL_SERIAL.get(source, 2)


def test_a_ray_model_needs_the_head_of_its_cluster_outside_its_nodes():
    """The Ray head on spark-1, a TP=2 model with the ray executor on its workers spark-2 and spark-3: the model's
    together holds the head after its nodes; the same model with the mp executor needs its nodes alone."""
    tp = {"name": "tp2", "model": "org/m", "tensor_parallel_size": 2, "nodes": ["spark-2", "spark-3"], "executor": "ray"}
    fleet = {"spark-1": {"group_names": ["sparks", "ray_head"]},
             "spark-2": {"group_names": ["sparks", "ray_workers"], "sparkfleet_models": [tp]},
             "spark-3": {"group_names": ["sparks", "ray_workers"], "sparkfleet_models": [tp]}}
    model = fp.build(fleet)["models"][0]
    assert (model["ray_head"], model["together"]) == ("spark-1", ["spark-2", "spark-3", "spark-1"])
    mp = dict(tp, executor="mp")
    fleet = dict((host, dict(v, sparkfleet_models=[mp]) if "sparkfleet_models" in v else v) for host, v in fleet.items())
    model = fp.build(fleet)["models"][0]
    assert (model["ray_head"], model["together"]) == (None, ["spark-2", "spark-3"])
    assert fp.together_hosts(["a", "b"], "a") == ["a", "b"] and fp.together_hosts(["a", "b"]) == ["a", "b"]


def test_a_plan_stored_before_together_is_planned_again():
    """Rolls read together from the stored plan: a plan of the format before it (a persistent fact cache of an
    older release) is not confirmed, so preflight and stored_plan plan the fleet again; the roll's functions refuse
    it rather than miss a Ray head."""
    plan = fp.build(fleet_of("tests/preflight/valid/ray_head_apart"))
    assert plan["format"] == fp.PLAN_FORMAT == 5
    assert fp.covers(plan, ["spark-1", "spark-2", "spark-3"])
    old = dict(plan, format=4, models=[dict((k, v) for k, v in m.items() if k not in ("ray_head", "together"))
                                       for m in plan["models"]])
    assert not fp.covers(old, ["spark-1", "spark-2", "spark-3"])
    with pytest.raises(fp.PlanError, match="not of this collection's format 5 .*found 4.*playbooks/preflight.yml"):
        fp.roll_serial(old)
