#!/usr/bin/env python3
"""One figure of ``make bench`` (tools/bench.sh): site.yml on the simulated fleet
through ansible-runner, ``--runs`` times (``--fresh``: on new containers each time,
for the first converge). Prints the row of bench/results.md
(``| label | min | median | runs | changed tasks (all hosts, each run) | before |``)
on stdout, where *before* is the same label's figure in ``--before`` (the results
file as the previous ``make bench`` left it); the ok/changed counts per host of
each run on stderr. Exits non-zero when a run failed or when a no-op rerun
changed anything (naming the tasks): a figure of a failed or changing run is not
a figure.

    python3 tools/bench.py LABEL [--no-op] [--runs 3] [--fresh] [--before bench/results.md]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys

import runner_events

TOP = runner_events.TOP


def changed_tasks(events):
    """'host: task' of every changed task result."""
    return ["%s: %s" % (e["event_data"].get("host", ""), e["event_data"].get("task", ""))
            for e in events if e.get("event") == "runner_on_ok" and (e["event_data"].get("res") or {}).get("changed")]


def before_figure(label, path):
    """The label's figure in an earlier results file: its median (or the single wall time of
    the one-run table), with the date of that make bench; '-' when there is none."""
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError:
        return "-"
    text = text.split("\n## ", 1)[0]  # the site.yml table, not the sections after it
    date = re.search(r"make bench` on (\d{4}-\d\d-\d\d)", text)
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] == label and len(cells) >= 2:
            figure = cells[2] if len(cells) >= 6 else cells[1]  # median | the one run's wall time
            return figure + (" (%s)" % date.group(1) if date else "")
    return "-"


def changed_total(stats):
    """Changed tasks summed over the hosts of a run's stats; '?' for a run without stats."""
    return sum(counts["changed"] for counts in runner_events.counts_per_host(stats).values()) if stats else "?"


def row(label, seconds, changed, before):
    """The results.md row: min and median of the runs' wall times, changed tasks of each run."""
    return "| %s | %.1f s | %.1f s | %d | %s | %s |" % (
        label, min(seconds), statistics.median(seconds), len(seconds), ", ".join(str(c) for c in changed), before)


def fresh_fleet():
    """New simulated hosts with the stand-ins in place, as make demo starts from."""
    for argv in (["tests/sim/destroy.yml", "-e", "@tests/sim/fleet.yml"], ["tests/sim/create.yml", "-e", "@tests/sim/fleet.yml"],
                 ["tests/sim/demo_prepare.yml", "-i", "inventories/sim"]):
        subprocess.run(["ansible-playbook"] + argv, cwd=TOP, check=True, stdout=subprocess.DEVNULL)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("label")
    parser.add_argument("--no-op", action="store_true", help="fail when a run changed anything")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fresh", action="store_true", help="new simulated hosts before each run")
    parser.add_argument("--before", default=os.path.join(TOP, "bench", "results.md"))
    parser.add_argument("--inventory", default=os.path.join(TOP, "inventories", "sim"))
    args = parser.parse_args(argv)
    before = before_figure(args.label, args.before)
    seconds, changed_counts = [], []
    for number in range(1, args.runs + 1):
        if args.fresh:
            fresh_fleet()
        took, run = runner_events.timed_run(os.path.join(TOP, "site.yml"), args.inventory, "%s run %d" % (args.label, number),
                                            "bench")
        seconds.append(took)
        changed_counts.append(changed_total(run.stats))
        for host, counts in runner_events.counts_per_host(run.stats).items():
            print("bench: %s run %d %s: %.1f s ok=%d changed=%d failed=%d unreachable=%d"
                  % (args.label, number, host, took, counts["ok"], counts["changed"], counts["failed"],
                     counts["unreachable"]), file=sys.stderr, flush=True)
        # The no-op rerun must change nothing: a figure of a run that changed things is not a no-op figure.
        changed = runner_events.changed_hosts(run.stats)
        if args.no_op and changed:
            for line in changed_tasks(run.events):
                print("bench: changed %s" % line, file=sys.stderr)
            print("bench: the rerun changed %d tasks (%s)" % (sum(changed.values()),
                  ", ".join("%s=%d" % item for item in changed.items())), file=sys.stderr)
            return 1
    print(row(args.label, seconds, changed_counts, before), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
