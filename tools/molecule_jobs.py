#!/usr/bin/env python3
"""Run Molecule scenarios JOBS at a time: `molecule test -s NAME` for each, in their own
processes, longest first, each one's output kept in build/molecule/NAME.log and printed
whole when it ends, so the logs of scenarios running side by side never interleave.

Scenarios share nothing that collides: each makes its own containers and docker network
(named after the scenario, tests/sim/create.yml), its own ssh_config entries
(sim_ssh_dir/hosts/NAME.conf) and its own Molecule ephemeral directory. Most of a
scenario's time is waiting (a vLLM loading, a service's restart, a retry's delay); on the
2-core test machine `make test` used 37% of the cores over its run with one scenario at a
time, so a second scenario fills the wait of the first.

After a failure no new scenario starts; the ones running finish. Exit status 1 when any
failed. Prints a table of every scenario's seconds at the end and, under it, where each failed
scenario stopped (its last failed task, or the tasks its idempotence step found changed): CI
keeps only the tail of a run, so the reason has to be there.

    python3 tools/molecule_jobs.py [--jobs 2] SCENARIO...
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = os.path.join(TOP, "build", "molecule")
# Seconds each scenario took alone on the 2-core test machine, one at a time (2026-11-27; site, about 13 min, and
# updates, 3 min 52 s, as measured the day before): only the order they start in, longest first, so the longest is
# never left for last. A scenario not listed starts first.
TYPICAL_SECONDS = {
    "site": 1000,
    "cluster": 450,
    "nccl": 242,
    "updates": 232,
    "models": 214,
    "network": 143,
    "driver": 99,
    "host_facts": 54,
}
# Lines kept of each failed scenario's excerpt: enough for a task's error and its recap, never the whole log.
EXCERPT_LINES = 40
ANSI = re.compile(r"\x1b\[[0-9;]*m")
FAILED_TASK = re.compile(r"(fatal|failed): \[")


def excerpt(path, limit=EXCERPT_LINES):
    """Where the scenario logged at PATH stopped: from the task header above its last failed task (Ansible's
    `fatal:`/`failed:` lines, an ignored or rescued one is followed by more tasks, so the last is the one that ended
    it) or from Molecule's idempotence verdict, whichever comes later, LIMIT lines at most, without colour codes."""
    try:
        with open(path, errors="replace") as log:
            lines = [ANSI.sub("", line.rstrip("\n")) for line in log]
    except OSError as exc:
        return ["(no log: %s)" % exc]
    start = None
    for index, line in enumerate(lines):
        if "Idempotence test failed" in line:
            start = index
        elif FAILED_TASK.search(line):
            header = index
            while header > 0 and "TASK [" not in lines[header]:
                header -= 1
            start = header if "TASK [" in lines[header] else index
    if start is None:
        return lines[-limit:]
    return lines[start:start + limit]


def order(scenarios, typical=None):
    """SCENARIOS, longest first by TYPICAL (TYPICAL_SECONDS; unknown ones first of all), each once."""
    typical = TYPICAL_SECONDS if typical is None else typical
    unique = list(dict.fromkeys(scenarios))
    return sorted(unique, key=lambda name: -typical.get(name, float("inf")))


class Jobs:
    """A queue of scenarios worked off by JOBS threads, each running one `molecule test` at a time (or, with
    COMMAND, LABEL, LOGS and TYPICAL, any other command per name: tools/make_jobs.py runs make targets)."""

    def __init__(self, scenarios, jobs, command=None, out=sys.stdout, label="molecule test -s %s", logs=None,
                 typical=None):
        self.queue = order(scenarios, typical)
        self.jobs = max(1, jobs)
        self.command = command or (lambda name: ["molecule", "test", "-s", name])
        self.label = label
        self.logs = logs or LOGS
        self.out = out
        self.lock = threading.Lock()
        self.results = []
        self.failed = False

    def take(self):
        with self.lock:
            if self.failed or not self.queue:
                return None
            return self.queue.pop(0)

    def run_one(self, name):
        path = os.path.join(self.logs, "%s.log" % name)
        with self.lock:
            print("=== %s: started (log: %s)" % (self.label % name, os.path.relpath(path, TOP)), file=self.out,
                  flush=True)
        start = time.monotonic()
        with open(path, "w") as log:
            try:
                rc = subprocess.call(self.command(name), stdout=log, stderr=subprocess.STDOUT, cwd=TOP)
            except OSError as exc:  # the command not on PATH (outside make): a failure, never an empty pass
                log.write("%s: %s\n" % (" ".join(self.command(name)), exc))
                rc = 127
        seconds = time.monotonic() - start
        with self.lock:
            if rc:
                self.failed = True
            self.results.append((name, rc, seconds))
            print("=== %s: output" % (self.label % name), file=self.out)
            with open(path, errors="replace") as log:
                for line in log:
                    self.out.write(line)
            verdict = "passed" if rc == 0 else "FAILED (rc %d)" % rc
            print("=== %s: %s in %.0f s" % (self.label % name, verdict, seconds), file=self.out, flush=True)

    def worker(self):
        while True:
            name = self.take()
            if name is None:
                return
            self.run_one(name)

    def run(self):
        os.makedirs(self.logs, exist_ok=True)
        start = time.monotonic()
        threads = [threading.Thread(target=self.worker, name="molecule-job-%d" % n) for n in range(self.jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.monotonic() - start

    def summary(self, wall, what="scenario"):
        """The table of every scenario that ran, and those a failure kept from starting."""
        lines = ["| %s | result | seconds |" % what, "|---|---|---|"]
        for name, rc, seconds in self.results:
            lines.append("| %s | %s | %.0f |" % (name, "passed" if rc == 0 else "FAILED", seconds))
        for name in self.queue:
            lines.append("| %s | not started (an earlier one failed) | |" % name)
        lines.append("")
        lines.append("%d %s(s), %d at a time: %.0f s of wall time, %.0f s of %s time"
                     % (len(self.results), what, self.jobs, wall, sum(result[2] for result in self.results), what))
        for name, rc, _seconds in self.results:
            if rc:
                path = os.path.join(self.logs, "%s.log" % name)
                lines.append("")
                lines.append("=== where %s stopped (%s):" % (name, os.path.relpath(path, TOP)))
                lines.extend(excerpt(path))
        return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--jobs", type=int, default=2, help="scenarios at a time (default 2)")
    parser.add_argument("scenarios", nargs="+")
    args = parser.parse_args(argv)
    jobs = Jobs(args.scenarios, args.jobs)
    wall = jobs.run()
    print(jobs.summary(wall), flush=True)
    return 1 if jobs.failed or jobs.queue else 0


if __name__ == "__main__":
    sys.exit(main())
