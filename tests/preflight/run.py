#!/usr/bin/env python3
"""Runs playbooks/preflight.yml against every example inventory (with what its
comments ask a user to write: example_inputs.yml) and every valid
but unusual inventory of tests/preflight/valid (must pass), and every broken
inventory of tests/preflight/cases (must fail with the expected words), with
hosts read locally from GB10 fixtures. A case with ``site: true`` runs the whole
site.yml (in check mode) instead, to prove that it stops at preflight: no task of
a later play runs and no host changes. Exits non-zero on any miss.

Each run goes through ansible-runner (tools/runner_events.py) and is judged on
its events: the expected words must be in what the failed tasks said
(``runner_on_failed``), changed counts per host come from the run's stats, and
the plays that started from ``playbook_on_play_start``.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import sys

import yaml

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(TOP, "tests", "preflight")
EXAMPLES = ["two-spark", "dual-independent", "three-spark", "single-spark", "sim", "sim-independent"]
sys.path.insert(0, os.path.join(TOP, "tools"))

import runner_events  # noqa: E402


# Runs at once: the two cores of the machines make test runs on (SPARKFLEET_PREFLIGHT_JOBS to change).
JOBS = int(os.environ.get("SPARKFLEET_PREFLIGHT_JOBS", "2"))
STORE_TASK = "Check the inventory, cluster layouts, models and host facts of the whole fleet"


# What a user writes into an example inventory before a run (its model revisions), as its comments ask; an example
# runs with it, a broken case without it (the case examples_as_shipped: the examples without it are refused).
EXAMPLE_INPUTS = os.path.join(HERE, "example_inputs.yml")


def preflight(inventory, fixture="nominal", site=False, limit=None, example=False):
    playbook = os.path.join(TOP, "site.yml") if site else os.path.join(TOP, "playbooks", "preflight.yml")
    return runner_events.run_playbook(
        playbook, inventory, check=site, limit=limit,
        extra_vars_files=[os.path.join(HERE, "offline.yml")] + ([EXAMPLE_INPUTS] if example else []),
        extra_vars={"test_fixture_root": os.path.join(TOP, "tests", "fixtures", "gb10", fixture)})


def stored_plan(run):
    """The fleet plan preflight stored for the rest of the run (None when it stored none)."""
    for result in runner_events.task_results(run.events, STORE_TASK).values():
        return (result.get("ansible_facts") or {}).get("sparkfleet_plan")
    return None


def without_memory(plan, reached):
    """The plan without the memory arithmetic of the hosts other than ``reached``, nor the utilization shares it
    gives their entries (under --limit their facts are not gathered, so preflight leaves it null and the entries
    keep the inventory's values)."""
    def entries_without_share(items):
        return [dict(item, entry=dict((k, v) for k, v in item["entry"].items() if k != "gpu_memory_utilization"))
                if isinstance(item, dict) and isinstance(item.get("entry"), dict) else item for item in items]

    hosts = {}
    for host, view in plan["hosts"].items():
        if host == reached:
            hosts[host] = view
            continue
        hosts[host] = dict((k, entries_without_share(v) if k in ("models", "services") else v)
                           for k, v in view.items() if k != "memory")
    return dict(plan, hosts=hosts)


# The play of playbooks/preflight.yml that refuses an inventory without Sparks (on localhost; skipped with --limit).
INVENTORY_PLAY = "The inventory has Sparks to work on"


def passing(run):
    """Problems of a run that must pass: exit code, failed tasks, changes, preflight not reached, no plan
    stored for a host of the run."""
    problems = []
    if run.rc != 0:
        problems.append("rc=%d" % run.rc)
    problems += ["failed %s" % line for line in runner_events.failure_text(run.events).splitlines()[:1]]
    problems += ["changed %s=%d" % item for item in runner_events.changed_hosts(run.stats).items()]
    if runner_events.plays_started(run.events) not in (["Preflight"], [INVENTORY_PLAY, "Preflight"]):
        problems.append("plays %s" % runner_events.plays_started(run.events))
    plan = stored_plan(run)
    if not plan:
        problems.append("no fleet plan stored")
    else:
        problems += ["the stored plan lacks %s" % host for host in runner_events.event_hosts(run.events)
                     if host not in plan["hosts"] and host != "localhost"]
    return problems


def failing(run, case):
    """Problems of a broken case: it must fail, in a task that says the expected words, and change nothing."""
    problems = [] if run.rc != 0 else ["rc=0"]
    said = runner_events.failure_text(run.events)
    if not runner_events.failed_tasks(run.events):
        problems.append("no task failed")
    problems += ["missing %r" % word for word in case["expect"] if word not in said]
    # Words that must never show anywhere (a secret written into the inventory by mistake).
    shown = run.stdout + json.dumps(run.events, default=str)
    problems += ["shows a word it must never show (case %s, 'never')" % case.get("inventory", "hosts.yml")
                 for word in case.get("never", []) if word in shown]
    problems += ["changed %s=%d" % item for item in runner_events.changed_hosts(run.stats).items()]
    later = [play for play in runner_events.plays_started(run.events) if play not in ("Preflight", INVENTORY_PLAY)]
    if case.get("site") and later:
        problems.append("no play after Preflight (ran: %s)" % ", ".join(later))
    return problems


def main():
    failures = []
    runs = [("example ", name, os.path.join(TOP, "inventories", name), None) for name in EXAMPLES]
    runs += [("valid   ", name, os.path.join(HERE, "valid", name), None) for name in sorted(os.listdir(os.path.join(HERE, "valid")))]
    with open(os.path.join(HERE, "cases.yml")) as handle:
        cases = yaml.safe_load(handle)
    runs += [("broken  ", name, os.path.join(HERE, "cases", name, case.get("inventory", "hosts.yml")), case)
             for name, case in sorted(cases.items())]

    def judged(item):
        kind, name, inventory, case = item
        if case is None:
            run = preflight(inventory, example=kind.startswith("example"))
            return run, passing(run)
        run = preflight(inventory, case.get("fixture", "nominal"), case.get("site", False))
        return run, failing(run, case)

    # Each run is its own ansible-playbook process with its own private data directory (ansible-runner), so
    # JOBS of them run at once; the lines print in the list's order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        results = list(pool.map(judged, runs))
    for (kind, name, inventory, case), (run, problems) in zip(runs, results):
        print("%-4s %s %s%s" % ("FAIL" if problems else "ok", kind, name, " (%s)" % "; ".join(problems) if problems else ""))
        if problems:
            failures.append((name, run))
    # Under --limit the plan is still the whole fleet's: a multi-node model keeps the nodes outside the limit
    # (only the memory arithmetic of the hosts outside it is null: their facts were not gathered).
    for name, limit in (("two-spark", "spark-2"), ("sim", "spark-2")):
        whole = stored_plan(preflight(os.path.join(TOP, "inventories", name), example=True))
        run = preflight(os.path.join(TOP, "inventories", name), limit=limit, example=True)
        problems = passing(run)
        if not problems and without_memory(stored_plan(run), limit) != without_memory(whole, limit):
            problems.append("the plan under --limit %s differs from the whole fleet's" % limit)
        print("%-4s %s %s%s" % ("FAIL" if problems else "ok", "limit   ", "%s --limit %s" % (name, limit),
                                " (%s)" % "; ".join(problems) if problems else ""))
        if problems:
            failures.append((name, run))
    for name, run in failures:
        print("\n===== %s\n%s\n%s" % (name, runner_events.failure_text(run.events), run.stdout[-4000:]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
