# -*- coding: utf-8 -*-
"""The filters a roll's batches are checked and sized with (plugins/filter/fleet_plan.py: roll_batch_problems,
roll_serial; the logic in plugins/module_utils/fleet_plan.py), on the fleet where the Ray head is none of the
ray-executor model's nodes (tests/preflight/valid/ray_head_apart: head spark-1, a TP=2 model on spark-2 and
spark-3) and on small fleets written here."""

from __future__ import annotations

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter import fleet_plan as plan_filter
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp

from inventory_loader import load_fleet

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
APART = os.path.join(TOP, "tests", "preflight", "valid", "ray_head_apart")
_PLANS = {}


def apart_plan():
    if "apart" not in _PLANS:
        _PLANS["apart"] = fp.build(load_fleet(APART, fp.PLAN_INPUTS))
    return _PLANS["apart"]


def tp_fleet(executor="ray", extra=None):
    """Ray head spark-1; a TP=2 model on spark-2 and spark-3 with ``executor``; ``extra`` hosts as given."""
    tp = {"name": "tp2", "model": "org/m", "tensor_parallel_size": 2, "nodes": ["spark-2", "spark-3"],
          "executor": executor}
    fleet = {"spark-1": {"group_names": ["sparks", "ray_head"]},
             "spark-2": {"group_names": ["sparks", "ray_workers"], "sparkfleet_models": [tp]},
             "spark-3": {"group_names": ["sparks", "ray_workers"], "sparkfleet_models": [tp]}}
    fleet.update(extra or {})
    return fleet


def test_the_filters_are_registered():
    filters = plan_filter.FilterModule().filters()
    assert filters["roll_batch_problems"] is plan_filter.roll_batch_problems
    assert filters["roll_serial"] is plan_filter.roll_serial


def test_default_serial_holds_the_model_and_its_ray_head():
    assert plan_filter.roll_serial(apart_plan()) == 3
    assert plan_filter.roll_batch_problems(apart_plan(), ["spark-1", "spark-2", "spark-3"], 3) == {}
    # In any order, one batch of the three is accepted.
    assert plan_filter.roll_batch_problems(apart_plan(), ["spark-2", "spark-3", "spark-1"], 3) == {}


def test_a_batch_of_the_model_s_nodes_only_is_refused_naming_the_ray_head():
    got = plan_filter.roll_batch_problems(apart_plan(), ["spark-2", "spark-3", "spark-1"], 2)
    assert sorted(got) == ["spark-1", "spark-2", "spark-3"]
    for host in ("spark-2", "spark-3"):
        assert got[host]["batch"] == ["spark-2", "spark-3"]
        assert got[host]["models"] == [{"name": "qwen35-122b", "together": ["spark-2", "spark-3", "spark-1"],
                                        "missing": ["spark-1"], "ray_head": "spark-1"}]
        assert got[host]["message"] == (
            "%s: model(s) qwen35-122b span hosts outside this batch (spark-2, spark-3): qwen35-122b needs spark-1, "
            "the head of its Ray cluster (the ray executor runs on it); their members and Ray head must change "
            "together. Set sparkfleet_rolling_serial to the size of the cluster (e.g. -e sparkfleet_rolling_serial=3), "
            "list the cluster's hosts (spark-2, spark-3, spark-1) next to each other in the inventory, or --limit the "
            "roll to the cluster's hosts, its Ray head spark-1 included." % host)
    # The head's own batch lacks the model: it is refused too, and told it is the model's Ray head.
    assert got["spark-1"]["batch"] == ["spark-1"]
    assert got["spark-1"]["models"][0]["missing"] == ["spark-2", "spark-3"]
    assert "qwen35-122b needs spark-2, spark-3 (this host is the head of its Ray cluster" in got["spark-1"]["message"]


def test_under_limit_the_ray_head_outside_the_play_splits_the_model():
    """--limit spark-2,spark-3: the plan is the whole fleet's, so the Ray head outside the play is missing."""
    got = plan_filter.roll_batch_problems(apart_plan(), ["spark-2", "spark-3"], 2)
    assert sorted(got) == ["spark-2", "spark-3"]
    assert got["spark-2"]["models"][0]["missing"] == ["spark-1"]
    assert "needs spark-1, the head of its Ray cluster" in got["spark-2"]["message"]
    # A batch missing a node and the head names both; the node as a node, the head as the head.
    got = plan_filter.roll_batch_problems(apart_plan(), ["spark-3", "spark-1", "spark-2"], 2)
    assert "qwen35-122b needs spark-2 (this host is the head of its Ray cluster" in got["spark-1"]["message"]
    assert got["spark-2"]["models"][0]["missing"] == ["spark-3", "spark-1"]
    assert "qwen35-122b needs spark-3 and spark-1, the head of its Ray cluster" in got["spark-2"]["message"]


def test_an_mp_model_needs_its_nodes_alone():
    plan = fp.build(tp_fleet("mp"))
    assert plan_filter.roll_serial(plan) == 2
    assert plan_filter.roll_batch_problems(plan, ["spark-2", "spark-3", "spark-1"], 2) == {}
    got = plan_filter.roll_batch_problems(plan, ["spark-1", "spark-2", "spark-3"], 2)
    assert sorted(got) == ["spark-2", "spark-3"]
    assert got["spark-2"]["models"] == [{"name": "tp2", "together": ["spark-2", "spark-3"], "missing": ["spark-3"],
                                         "ray_head": None}]
    assert got["spark-2"]["message"] == (
        "spark-2: model(s) tp2 span hosts outside this batch (spark-1, spark-2): tp2 needs spark-3; their members "
        "must change together. Set sparkfleet_rolling_serial to the size of the cluster (e.g. -e "
        "sparkfleet_rolling_serial=2), list the cluster's hosts (spark-2, spark-3) next to each other in the "
        "inventory, or --limit the roll to the cluster's hosts.")


def test_a_ray_model_whose_nodes_hold_the_head_names_no_ray_head():
    """two-spark's layout: the head is a node; a batch without it misses a node, said as before."""
    tp = {"name": "tp2", "model": "org/m", "nodes": ["spark-1", "spark-2"], "executor": "ray"}
    plan = fp.build({"spark-1": {"group_names": ["ray_head"], "sparkfleet_models": [tp]},
                     "spark-2": {"group_names": ["ray_workers"], "sparkfleet_models": [tp]}})
    assert plan_filter.roll_serial(plan) == 2
    got = plan_filter.roll_batch_problems(plan, ["spark-1", "spark-2"], 1)
    assert [m["ray_head"] for m in got["spark-2"]["models"]] == [None]
    assert "model(s) tp2 span hosts outside this batch (spark-2): tp2 needs spark-1; their members must" in (
        got["spark-2"]["message"])


def test_models_sharing_a_host_are_one_group():
    """A ray model on spark-2+3 (head spark-1) and an mp model on spark-1+4: spark-1 is in one batch, so all four
    are; the default serial is the merged group's size."""
    pair = {"name": "pair", "model": "org/p", "nodes": ["spark-1", "spark-4"], "executor": "mp"}
    fleet = tp_fleet("ray", {"spark-4": {"group_names": ["sparks"], "sparkfleet_models": [pair]}})
    fleet["spark-1"] = dict(fleet["spark-1"], sparkfleet_models=[pair])
    plan = fp.build(fleet)
    # The plan's models in the order of their first nodes (pair on spark-1 first), hosts as they first appear.
    assert [m["name"] for m in plan["models"]] == ["pair", "tp2"]
    assert fp.roll_groups(plan) == [["spark-1", "spark-4", "spark-2", "spark-3"]]
    assert plan_filter.roll_serial(plan) == 4
    hosts = ["spark-1", "spark-2", "spark-3", "spark-4"]
    assert plan_filter.roll_batch_problems(plan, hosts, 4) == {}
    # Three at a time: the first batch holds tp2 and its Ray head, not pair's spark-4.
    got = plan_filter.roll_batch_problems(plan, hosts, 3)
    assert sorted(got) == ["spark-1", "spark-4"]
    assert [(m["name"], m["missing"]) for m in got["spark-1"]["models"]] == [("pair", ["spark-4"])]
    got = plan_filter.roll_batch_problems(plan, hosts, 2)
    assert [(m["name"], m["missing"]) for m in got["spark-1"]["models"]] == [("pair", ["spark-4"]), ("tp2", ["spark-3"])]
    assert "model(s) pair, tp2 span hosts outside this batch (spark-1, spark-2)" in got["spark-1"]["message"]
    assert "e.g. -e sparkfleet_rolling_serial=4" in got["spark-1"]["message"]


def test_batches_are_ansible_s():
    """As ansible-core's PlaybookExecutor makes them for an integer serial (the roll plays' serial is one)."""
    assert fp.roll_batches(["a", "b", "c", "d", "e"], 2) == [["a", "b"], ["c", "d"], ["e"]]
    assert fp.roll_batches(["a", "b", "c"], "3") == [["a", "b", "c"]]
    assert fp.roll_batches(["a", "b", "c"], 0) == [["a", "b", "c"]]
    assert fp.roll_batches(["a", "b"], -1) == [["a", "b"]]
    assert fp.roll_batches([], 2) == []


def test_without_a_plan_or_multi_node_models_nothing_is_split():
    assert plan_filter.roll_serial({}) == 1 and plan_filter.roll_serial(None) == 1
    assert plan_filter.roll_batch_problems({}, ["a", "b"], 1) == {}
    plan = fp.build({"a": {"sparkfleet_models": [{"name": "m"}]}, "b": {}})
    assert plan_filter.roll_serial(plan) == 1
    assert plan_filter.roll_batch_problems(plan, ["a", "b"], 1) == {}


@pytest.mark.parametrize("name", ["roll_serial", "roll_batch_problems"])
def test_a_plan_of_another_format_is_refused(name):
    old = dict(apart_plan(), format=4)
    args = (old,) if name == "roll_serial" else (old, ["spark-1"], 1)
    with pytest.raises(AnsibleFilterError, match="%s: the fleet plan is not of this collection's format" % name):
        getattr(plan_filter, name)(*args)
