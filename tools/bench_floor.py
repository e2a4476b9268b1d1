#!/usr/bin/env python3
"""The floor of a no-op rerun of site.yml (issue 12): what the run would take if
every task cost what a trivial one costs over the same connection.

1. Measures, on the hosts of ``--inventory``, the cost of one trivial task of each
   kind with all hosts in parallel: a module run on the host (``command: /bin/true``),
   a task the controller answers alone (``set_fact``), and a skipped one; each as
   ``(time of N such tasks - time of an empty play) / N``.
2. Runs site.yml once (it must change nothing) and counts, per host, the module
   calls on the host (each loop item one call), the controller-side tasks and the
   skipped ones, from ansible-runner's events.
3. The floor is those counts (of the busiest host: the linear strategy waits for
   it) times those costs. What the run takes above it is the tasks' own work: the
   gates' waits (completions, pings), checksums, templating. The tasks that cost
   most above a trivial call are listed on stderr.

Prints the markdown lines of bench/results.md on stdout.

    python3 tools/bench_floor.py [--inventory inventories/sim] [--probe-tasks 40]
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile

import yaml

import runner_events

TOP = runner_events.TOP
# Actions the controller answers without a module call on the host (the collection's
# fleet_preflight is an action plugin that reads hostvars only).
CONTROLLER_ACTIONS = frozenset(
    ["ansible.builtin." + name for name in (
        "set_fact", "assert", "debug", "fail", "include_tasks", "import_tasks", "include_role", "import_role",
        "include_vars", "validate_argument_spec", "meta", "add_host", "group_by", "set_stats", "pause")]
    + ["sparkfleet.gb10.fleet_preflight"])


# Actions that make two module calls for a file that is already right: a stat to compare
# checksums, then the file module to settle owner, group and mode (ansible-core's copy action,
# which template hands its rendered file to).
TWO_CALL_ACTIONS = frozenset(("ansible.builtin.copy", "ansible.builtin.template"))


def short(action):
    return action if "." in action else "ansible.builtin." + action


def probe_playbook(kind, count):
    """A play of ``count`` trivial tasks of one kind (``empty``, ``module``, ``controller``, ``skipped``)."""
    tasks = {
        "module": {"ansible.builtin.command": "/bin/true", "changed_when": False},
        "controller": {"ansible.builtin.set_fact": {"sparkfleet_floor_probe": 1}},
        "skipped": {"ansible.builtin.command": "/bin/true", "when": False},
    }
    body = [] if kind == "empty" else [dict(name="trivial %s task %d" % (kind, i), **tasks[kind]) for i in range(count)]
    return [{"name": "Floor probe: %s" % kind, "hosts": "sparks", "gather_facts": False, "tasks": body}]


def costs(inventory, count, scratch):
    """Seconds of one trivial task of each kind, all hosts in parallel."""
    took = {}
    for kind in ("empty", "module", "controller", "skipped"):
        path = os.path.join(scratch, "probe-%s.yml" % kind)
        with open(path, "w") as handle:
            yaml.safe_dump(probe_playbook(kind, count), handle, sort_keys=False)
        took[kind], dummy = runner_events.timed_run(path, inventory, "probe " + kind, "bench-floor")
    return dict((kind, max(0.0, (took[kind] - took["empty"]) / count)) for kind in ("module", "controller", "skipped"))


def calls_of(event):
    """Module calls on the host of one result event (a loop's items each count; skipped items do not;
    copy and template count two each)."""
    data = event["event_data"]
    res = data.get("res") or {}
    per_item = 2 if short(data.get("resolved_action") or data.get("task_action") or "") in TWO_CALL_ACTIONS else 1
    if "results" in res and isinstance(res["results"], list):
        return per_item * sum(1 for item in res["results"] if not (isinstance(item, dict) and item.get("skipped")))
    return per_item


def tally(events):
    """{host: Counter(module=, controller=, skipped=)} and [(duration, host, task, calls)] of module tasks."""
    per_host = collections.defaultdict(collections.Counter)
    module_tasks = []
    for event in events:
        kind = event.get("event")
        data = event.get("event_data") or {}
        host = data.get("host")
        if not host or kind not in ("runner_on_ok", "runner_on_skipped", "runner_on_failed"):
            continue
        if kind == "runner_on_skipped":
            per_host[host]["skipped"] += 1
        elif short(data.get("resolved_action") or data.get("task_action") or "") in CONTROLLER_ACTIONS:
            per_host[host]["controller"] += 1
        else:
            calls = calls_of(event)
            per_host[host]["module"] += calls
            module_tasks.append((float(data.get("duration") or 0.0), host, data.get("task", ""), calls))
    return per_host, module_tasks


def floor(per_host, cost):
    """Seconds of the busiest host's tasks at the trivial costs."""
    return max(sum(counts[kind] * cost[kind] for kind in cost) for counts in per_host.values())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--inventory", default=os.path.join(TOP, "inventories", "sim"))
    parser.add_argument("--probe-tasks", type=int, default=40)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="sparkfleet-bench-floor.")
    try:
        cost = costs(args.inventory, args.probe_tasks, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    wall, run = runner_events.timed_run(os.path.join(TOP, "site.yml"), args.inventory, "no-op rerun", "bench-floor")
    changed = runner_events.changed_hosts(run.stats)
    if changed:
        raise SystemExit("bench-floor: the rerun changed tasks (%s); the floor is of a no-op rerun" % changed)
    per_host, module_tasks = tally(run.events)
    above = sorted(((duration - calls * cost["module"], calls, host, task)
                    for duration, host, task, calls in module_tasks), reverse=True)
    for seconds, calls, host, task in above[:15]:
        print("bench-floor: %5.1f s above %.2f s x %d call(s): %s: %s" % (seconds, cost["module"], calls, host, task),
              file=sys.stderr)
    low = floor(per_host, cost)
    print("| one trivial task, all hosts in parallel | module on the host %.2f s | controller-side %.3f s | skipped %.3f s |"
          % (cost["module"], cost["controller"], cost["skipped"]))
    print("|---|---|---|---|")
    for host in sorted(per_host):
        counts = per_host[host]
        print("| %s: tasks of the no-op rerun | %d module calls | %d controller-side | %d skipped |"
              % (host, counts["module"], counts["controller"], counts["skipped"]))
    print()
    print("Floor (the busiest host's counts x the trivial costs, a lower bound: the linear strategy waits for the "
          "slowest host at every task): %.1f s; the rerun measured with it: %.1f s, so %.1f s is the tasks' own work "
          "(gates' waits, checksums, templating) and the hosts' differences." % (low, wall, wall - low))
    return 0


if __name__ == "__main__":
    sys.exit(main())
