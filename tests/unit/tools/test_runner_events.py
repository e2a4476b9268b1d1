# -*- coding: utf-8 -*-
"""tools/runner_events.py and the preflight judge (tests/preflight/run.py) on real
ansible-runner event streams recorded under tests/fixtures/runner."""

import copy
import importlib.util
import os
import sys

import pytest
import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RECORDED = os.path.join(TOP, "tests", "fixtures", "runner")
sys.path.insert(0, os.path.join(TOP, "tools"))

import runner_events  # noqa: E402

_spec = importlib.util.spec_from_file_location("preflight_run", os.path.join(TOP, "tests", "preflight", "run.py"))
preflight_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(preflight_run)


def recorded(name, rc):
    events = runner_events.load_events(os.path.join(RECORDED, name))
    return runner_events.Run(rc, "successful" if rc == 0 else "failed", events, runner_events.stats_of(events))


def stats_event(events):
    return next(e for e in events if e["event"] == "playbook_on_stats")


@pytest.fixture
def passing_run():
    return recorded("preflight-sim.jsonl", 0)


@pytest.fixture
def failing_run():
    return recorded("site-check-many-mistakes.jsonl", 2)


@pytest.fixture
def many_mistakes():
    with open(os.path.join(TOP, "tests", "preflight", "cases.yml")) as handle:
        return yaml.safe_load(handle)["many_mistakes_at_once"]


def test_counts_per_host_come_from_the_stats_event(passing_run):
    counts = runner_events.counts_per_host(passing_run.stats)
    assert counts == {
        "spark-1": {"ok": 5, "changed": 0, "unreachable": 0, "failed": 0, "skipped": 0, "rescued": 0, "ignored": 0},
        "spark-2": {"ok": 4, "changed": 0, "unreachable": 0, "failed": 0, "skipped": 0, "rescued": 0, "ignored": 0},
    }
    assert runner_events.changed_hosts(passing_run.stats) == {}


def test_a_host_that_changed_is_named_with_its_count(passing_run):
    events = copy.deepcopy(passing_run.events)
    stats_event(events)["event_data"]["changed"] = {"spark-2": 3, "spark-1": 0}
    stats = runner_events.stats_of(events)
    assert runner_events.changed_hosts(stats) == {"spark-2": 3}
    assert runner_events.counts_per_host(stats)["spark-2"]["changed"] == 3


def test_a_run_that_never_reached_its_recap_has_no_stats(passing_run):
    events = [e for e in passing_run.events if e["event"] != "playbook_on_stats"]
    assert runner_events.stats_of(events) == {}
    assert runner_events.counts_per_host({}) == {}


def test_plays_started(passing_run, failing_run):
    assert runner_events.plays_started(passing_run.events) == ["Preflight"]
    assert runner_events.plays_started(failing_run.events) == ["Preflight"]


def test_failed_task_carries_host_task_and_message(passing_run, failing_run):
    assert runner_events.failed_tasks(passing_run.events) == []
    [failure] = runner_events.failed_tasks(failing_run.events)
    assert failure["host"] == "spark-1"
    assert failure["task"] == "Check the inventory, cluster layouts, models and host facts of the whole fleet"
    assert failure["play"] == "Preflight"
    assert failure["msg"].startswith("Preflight found 10 problem(s); nothing was changed:")
    assert runner_events.counts_per_host(failing_run.stats)["spark-1"]["failed"] == 1


def test_ignored_failures_do_not_count(failing_run):
    events = copy.deepcopy(failing_run.events)
    for event in events:
        if event["event"] == "runner_on_failed":
            event["event_data"]["ignore_errors"] = True
    assert runner_events.failed_tasks(events) == []


def test_failed_loop_items_give_the_message():
    events = [{"event": "runner_on_failed", "event_data": {"host": "h", "task": "t", "res": {
        "results": [{"failed": False, "msg": "fine"}, {"failed": True, "msg": "item two broke"}]}}}]
    assert runner_events.failed_tasks(events)[0]["msg"] == "item two broke"


def test_the_recordings_do_not_name_the_checkout():
    for name in os.listdir(RECORDED):
        with open(os.path.join(RECORDED, name)) as handle:
            assert TOP not in handle.read(), name


# The judge of tests/preflight/run.py on the same recordings.

def test_a_clean_preflight_passes(passing_run):
    assert preflight_run.passing(passing_run) == []


def test_a_broken_case_with_its_words_passes_the_judge(failing_run, many_mistakes):
    assert preflight_run.failing(failing_run, many_mistakes) == []


def test_a_word_the_failed_task_did_not_say_is_missing(failing_run, many_mistakes):
    case = dict(many_mistakes, expect=many_mistakes["expect"] + ["spark-9: not in this fleet"])
    assert preflight_run.failing(failing_run, case) == ["missing 'spark-9: not in this fleet'"]


def test_words_only_in_ok_results_do_not_count(failing_run, many_mistakes):
    # "Preflight" is the play's name and in every event; only what the failed task said counts.
    events = [e for e in failing_run.events if e["event"] != "runner_on_failed"]
    run = runner_events.Run(2, "failed", events, failing_run.stats)
    problems = preflight_run.failing(run, many_mistakes)
    assert "no task failed" in problems
    assert "missing 'Preflight found 10 problem(s); nothing was changed'" in problems


def test_a_later_play_or_a_change_fails_a_site_case(failing_run, many_mistakes):
    events = copy.deepcopy(failing_run.events)
    start = next(e for e in events if e["event"] == "playbook_on_play_start")
    later = copy.deepcopy(start)
    later["event_data"]["play"] = "NVIDIA driver"
    events.insert(events.index(start) + 1, later)
    stats_event(events)["event_data"]["changed"] = {"spark-3": 1}
    problems = preflight_run.failing(runner_events.Run(2, "failed", events, runner_events.stats_of(events)), many_mistakes)
    assert problems == ["changed spark-3=1", "no play after Preflight (ran: NVIDIA driver)"]


def test_a_passing_inventory_must_exit_zero_and_change_nothing(passing_run, failing_run):
    assert preflight_run.passing(runner_events.Run(2, "failed", passing_run.events, passing_run.stats)) == ["rc=2"]
    problems = preflight_run.passing(failing_run)
    assert problems[0] == "rc=2"
    assert problems[1].startswith("failed spark-1: Check the inventory, cluster layouts, models and host facts")
    assert problems[-1] == "no fleet plan stored"


def test_a_passing_preflight_stores_the_plan_of_every_host(passing_run):
    plan = preflight_run.stored_plan(passing_run)
    assert sorted(plan["hosts"]) == ["spark-1", "spark-2"]
    assert [(m["name"], m["nodes"]) for m in plan["models"]] == [("tiny-tp", ["spark-1", "spark-2"])]
    events = copy.deepcopy(passing_run.events)
    for event in events:
        facts = ((event.get("event_data") or {}).get("res") or {}).get("ansible_facts") or {}
        if "sparkfleet_plan" in facts:
            del facts["sparkfleet_plan"]["hosts"]["spark-2"]
    assert preflight_run.passing(runner_events.Run(0, "successful", events, passing_run.stats)) == [
        "the stored plan lacks spark-2"]
    for event in events:
        ((event.get("event_data") or {}).get("res") or {}).pop("ansible_facts", None)
    assert preflight_run.passing(runner_events.Run(0, "successful", events, passing_run.stats)) == [
        "no fleet plan stored"]


# make bench's driver (tools/bench.py) on the same recordings.

import bench  # noqa: E402


def test_bench_changed_sums_over_the_hosts_of_the_stats(passing_run):
    assert bench.changed_total(passing_run.stats) == 0
    events = copy.deepcopy(passing_run.events)
    stats_event(events)["event_data"]["changed"] = {"spark-1": 60, "spark-2": 42}
    assert bench.changed_total(runner_events.stats_of(events)) == 102
    assert bench.row("first-converge", [279.44, 281.0, 300.2], [102, 102, 102], "-") == \
        "| first-converge | 279.4 s | 281.0 s | 3 | 102, 102, 102 | - |"


def test_bench_changed_of_a_run_without_stats_says_so():
    assert bench.changed_total({}) == "?"


def test_bench_names_the_changed_tasks(passing_run):
    assert bench.changed_tasks(passing_run.events) == []
    events = copy.deepcopy(passing_run.events)
    ok = next(e for e in events if e["event"] == "runner_on_ok" and e["event_data"]["host"] == "spark-2")
    ok["event_data"]["res"]["changed"] = True
    assert bench.changed_tasks(events) == ["spark-2: " + ok["event_data"]["task"]]


def test_under_limit_only_the_reached_host_keeps_its_memory_arithmetic(passing_run):
    plan = preflight_run.stored_plan(passing_run)
    assert plan["hosts"]["spark-1"]["memory"] and plan["hosts"]["spark-2"]["memory"]
    seen = preflight_run.without_memory(plan, "spark-2")
    assert "memory" not in seen["hosts"]["spark-1"] and seen["hosts"]["spark-2"]["memory"] == plan["hosts"]["spark-2"]["memory"]
    assert seen["models"] == plan["models"] and plan["hosts"]["spark-1"]["memory"]  # the plan itself is left as it was


def test_under_limit_the_shares_of_the_hosts_outside_it_are_left_out_too():
    share = {"name": "m", "gpu_memory_utilization": 0.43}
    view = {"models": [{"name": "m", "entry": share}], "services": [{"name": "m", "entry": share}],
            "memory": {"services": {"m": {"utilization": 0.43}}}}
    plan = {"models": [], "hosts": {"spark-1": copy.deepcopy(view), "spark-2": copy.deepcopy(view)}}
    seen = preflight_run.without_memory(plan, "spark-2")
    assert seen["hosts"]["spark-2"] == view
    assert seen["hosts"]["spark-1"] == {"models": [{"name": "m", "entry": {"name": "m"}}],
                                        "services": [{"name": "m", "entry": {"name": "m"}}]}
    assert plan["hosts"]["spark-1"] == view  # the plan itself is left as it was
