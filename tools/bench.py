#!/usr/bin/env python3
"""One timed run of ``make bench`` (tools/bench.sh): site.yml on the simulated
fleet through ansible-runner. Prints the row of bench/results.md
(``| label | wall time | changed tasks (all hosts) | exit |``) on stdout, the
ok/changed counts per host from the run's stats on stderr, and exits non-zero
when the run failed or when the no-op rerun changed anything (naming the tasks).

    python3 tools/bench.py LABEL [--no-op] [--inventory inventories/sim]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import runner_events

TOP = runner_events.TOP


def changed_tasks(events):
    """'host: task' of every changed task result."""
    return ["%s: %s" % (e["event_data"].get("host", ""), e["event_data"].get("task", ""))
            for e in events if e.get("event") == "runner_on_ok" and (e["event_data"].get("res") or {}).get("changed")]


def row(label, seconds, stats, rc):
    """The results.md row: changed tasks summed over the hosts of the run's stats."""
    changed = sum(counts["changed"] for counts in runner_events.counts_per_host(stats).values()) if stats else "?"
    return "| %s | %.1f s | %s | %s |" % (label, seconds, changed, rc)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("label")
    parser.add_argument("--no-op", action="store_true", help="fail when the run changed anything")
    parser.add_argument("--inventory", default=os.path.join(TOP, "inventories", "sim"))
    args = parser.parse_args(argv)
    start = time.monotonic()
    run = runner_events.run_playbook(os.path.join(TOP, "site.yml"), args.inventory)
    seconds = time.monotonic() - start
    print(row(args.label, seconds, run.stats, run.rc), flush=True)
    for host, counts in runner_events.counts_per_host(run.stats).items():
        print("bench: %s %s: ok=%d changed=%d failed=%d unreachable=%d"
              % (args.label, host, counts["ok"], counts["changed"], counts["failed"], counts["unreachable"]), file=sys.stderr)
    if run.rc != 0:
        for failure in runner_events.failed_tasks(run.events):
            print("bench: failed %s: %s: %s" % (failure["host"], failure["task"], failure["msg"]), file=sys.stderr)
        print("\n".join(run.stdout.splitlines()[-40:]), file=sys.stderr)
        return 1
    # The no-op rerun must change nothing: a figure of a run that changed things is not a no-op figure.
    changed = runner_events.changed_hosts(run.stats)
    if args.no_op and changed:
        for line in changed_tasks(run.events):
            print("bench: changed %s" % line, file=sys.stderr)
        print("bench: the rerun changed %d tasks (%s)" % (sum(changed.values()),
              ", ".join("%s=%d" % item for item in changed.items())), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
