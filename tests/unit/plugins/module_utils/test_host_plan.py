# -*- coding: utf-8 -*-
"""What the roles that check or drain a host read from its part of the fleet plan (plugins/module_utils/host_plan.py,
filters plan_endpoints, plan_nccl_units, drain_phases, drain_retry_reads, drain_retry_timers), on a real plan: a
Ray head serving a multi-node mp model, a ray-executor model and one of its own; a Ray worker that follows the mp
model (the ray model runs inside its Ray worker, no unit) and serves one of its own; a host in no Ray group and
with no model."""

from __future__ import annotations

import pytest

from ansible_collections.sparkfleet.gb10.plugins.filter.host_plan import FilterModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import host_plan

FILTERS = FilterModule().filters()
SHARED = [{"name": "tp", "model": "org/tp", "nodes": ["h", "w"], "port": 8100},
          {"name": "r", "model": "org/r", "nodes": ["h", "w"], "executor": "ray", "port": 8200, "host": "10.0.0.1"}]
FLEET = {"h": {"group_names": ["sparks", "ray_head"], "sparkfleet_fabric_address": "10.0.0.1",
               "sparkfleet_models": SHARED + [{"name": "solo", "model": "org/solo", "port": 8300, "served_name": "Solo"}]},
         "w": {"group_names": ["sparks", "ray_workers"], "sparkfleet_fabric_address": "10.0.0.2",
               "sparkfleet_models": SHARED + [{"name": "mine", "model": "org/mine", "port": 8400}]},
         "x": {"group_names": ["sparks"]}}
HEAD, WORKER = "lab-ray-head", "lab-ray-worker"


@pytest.fixture(scope="module")
def views():
    plan = fp.build(FLEET)
    return dict((host, fp.host_view(plan, host, unit_prefix="u-")) for host in FLEET)


def test_endpoints_are_the_entries_as_written_with_where_the_gates_call_them(views):
    got = FILTERS["plan_endpoints"](views["h"])
    assert [(e["name"], e["port"], e["served_name"], e["call_address"]) for e in got] == [
        ("tp", 8100, "org/tp", "127.0.0.1"), ("r", 8200, "org/r", "10.0.0.1"), ("solo", 8300, "Solo", "127.0.0.1")]
    # the entry as written, placement keys included, not the plan's stripped copy
    assert got[0]["nodes"] == ["h", "w"] and got[1]["executor"] == "ray" and "cluster" not in got[0]
    # a follower serves no API: only the worker's own model
    assert [e["name"] for e in FILTERS["plan_endpoints"](views["w"])] == ["mine"]
    assert FILTERS["plan_endpoints"](views["x"]) == []


def test_the_nccl_units_are_the_ray_unit_then_the_vllm_units(views):
    assert FILTERS["plan_nccl_units"](views["h"], HEAD, WORKER) == [
        "lab-ray-head.service", "u-tp.service", "u-r.service", "u-solo.service"]
    # the ray model's follower runs inside the Ray worker: no unit of its own
    assert FILTERS["plan_nccl_units"](views["w"], HEAD, WORKER) == [
        "lab-ray-worker.service", "u-tp.service", "u-mine.service"]
    assert FILTERS["plan_nccl_units"](views["x"], HEAD, WORKER) == []


def test_the_drain_stops_followers_then_heads_then_the_ray_worker_then_the_ray_head(views):
    assert FILTERS["drain_phases"](views["w"], HEAD, WORKER) == [["u-tp"], ["u-mine"], [WORKER], []]
    assert FILTERS["drain_phases"](views["h"], HEAD, WORKER) == [[], ["u-tp", "u-r", "u-solo"], [], [HEAD]]
    assert FILTERS["drain_phases"](views["x"], HEAD, WORKER) == [[], [], [], []]
    assert len(host_plan.drain_phases({}, HEAD, WORKER)) == len(host_plan.DRAIN_PHASES)


def test_the_retry_reads_ask_each_vllm_unit_and_the_active_timers():
    reads = FILTERS["drain_retry_reads"](["u-a", "u-b"])
    assert reads == [
        {"name": "on_failure", "argv": ["systemctl", "show", "--property=OnFailure", "u-a.service", "u-b.service"]},
        {"name": "active_timers",
         "argv": ["systemctl", "list-units", "--plain", "--no-legend", "--type=timer", "--state=active"]}]


def _answer(on_failure, active):
    return {"commands": {"on_failure": {"rc": 0, "stdout_lines": on_failure},
                         "active_timers": {"rc": 0, "stdout_lines": active}}}


def test_the_retry_timers_are_those_named_that_are_active_each_once():
    read = _answer(["OnFailure=retry@u-a.timer notify@u-a.service", "", "OnFailure=retry@gone.timer",
                    "OnFailure=", "OnFailure=b.timer retry@u-a.timer c.timer", "Description=x.timer"],
                   ["apt-daily.timer loaded active waiting Daily apt", "", "   ", "retry@u-a.timer loaded active",
                    "c.timer loaded active", "b.timer loaded active", "x.timer loaded active"])
    # not a timer (notify@...service), not active (gone), a timer active but named by no unit (apt-daily,
    # x.timer on a line that is no OnFailure=): left out; in the units' order, once
    assert FILTERS["drain_retry_timers"](read) == ["retry@u-a.timer", "b.timer", "c.timer"]


@pytest.mark.parametrize("read", [{}, {"changed": False, "skipped": True}, _answer([], []),
                                  _answer(["OnFailure=retry@u-a.timer"], []),
                                  {"commands": {"on_failure": {"rc": 0, "stdout_lines": ["OnFailure=a.timer"]}}}])
def test_no_retry_timer_without_a_read_a_unit_or_an_active_timer(read):
    assert FILTERS["drain_retry_timers"](read) == []
