# -*- coding: utf-8 -*-
"""tools/bench_floor.py: the probe plays, the tally of a recorded run and the floor."""

import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import bench_floor  # noqa: E402
import runner_events  # noqa: E402

RECORDED = os.path.join(REPO, "tests", "fixtures", "runner", "preflight-sim.jsonl")


def test_probe_playbooks_hold_count_tasks_of_their_kind():
    assert bench_floor.probe_playbook("empty", 40)[0]["tasks"] == []
    module = bench_floor.probe_playbook("module", 3)[0]["tasks"]
    assert [t["ansible.builtin.command"] for t in module] == ["/bin/true"] * 3
    assert all(t["when"] is False for t in bench_floor.probe_playbook("skipped", 2)[0]["tasks"])
    assert len(bench_floor.probe_playbook("controller", 5)[0]["tasks"]) == 5


def test_tally_of_a_recorded_preflight():
    # The recording: argument specs, include_role and the fleet_preflight action plugin on the
    # controller; gb10_facts on each host.
    per_host, module_tasks = bench_floor.tally(runner_events.load_events(RECORDED))
    assert per_host["spark-1"]["module"] == 1 and per_host["spark-2"]["module"] == 1
    assert per_host["spark-1"]["controller"] == 4 and per_host["spark-2"]["controller"] == 3
    assert sorted(task for dummy, dummy, task, dummy in module_tasks) == ["Gather GB10 facts", "Gather GB10 facts"]


def test_loop_items_count_as_calls_and_skipped_items_do_not():
    event = {"event": "runner_on_ok", "event_data": {"host": "h", "task": "t", "task_action": "ansible.builtin.file",
                                                     "duration": 2.0, "res": {"results": [{}, {"skipped": True}, {}]}}}
    per_host, module_tasks = bench_floor.tally([event, {"event": "runner_on_skipped", "event_data": {"host": "h"}}])
    assert per_host["h"] == {"module": 2, "skipped": 1}
    assert module_tasks == [(2.0, "h", "t", 2)]


def test_copy_and_template_are_two_calls_each():
    def ok(action, res):
        return {"event": "runner_on_ok", "event_data": {"host": "h", "task": action, "task_action": action,
                                                        "duration": 1.0, "res": res}}
    per_host, dummy = bench_floor.tally([ok("ansible.builtin.template", {}), ok("copy", {"results": [{}, {}]}),
                                         ok("ansible.builtin.stat", {})])
    assert per_host["h"]["module"] == 2 + 4 + 1


def test_floor_is_the_busiest_hosts():
    per_host = {"a": {"module": 100, "controller": 50, "skipped": 10}, "b": {"module": 90, "controller": 80, "skipped": 0}}
    cost = {"module": 0.4, "controller": 0.04, "skipped": 0.02}
    assert round(bench_floor.floor(per_host, cost), 3) == 42.2  # a: 40 + 2 + 0.2; b: 36 + 3.2
