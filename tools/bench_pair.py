#!/usr/bin/env python3
"""The no-op rerun of site.yml at two revisions, measured in turns on the same fleet (after
``make demo``): BEFORE, this checkout, BEFORE, this checkout, ... ``--runs`` times each.

This machine's speed drifts by more than a change to the rerun saves (the same no-op rerun took
56 s one day and 66 s another), so a figure measured today is compared with one measured in
the same minutes, on the same hosts, not with yesterday's ``make bench``. BEFORE is checked out
into a git worktree under the system's temporary directory (outside this tree, so lint and
tests never read it). Each run must change nothing (its recap says changed=0
on every host), else the script stops: a figure of a run that changed something is not a
no-op figure. Prints a markdown table (min and median of each revision) on stdout.

Where the two revisions manage a file differently (a helper script that changed), each puts its own back when its
turn comes, so neither run is a no-op: ``--settle`` runs each revision once more, unmeasured and allowed to change
things, right before each of its measured runs, which must then change nothing.

    python3 tools/bench_pair.py BEFORE_REV [--runs 3] [--settle] [--inventory inventories/sim]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from bench_engines import recap  # tools/

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def worktree(rev):
    """A checkout of ``rev`` in a temporary directory (made once; its collection link points into it)."""
    sha = subprocess.run(["git", "-C", TOP, "rev-parse", "--verify", rev + "^{commit}"], check=True,
                         capture_output=True, text=True).stdout.strip()
    path = os.path.join(tempfile.gettempdir(), "sparkfleet-bench-pair", sha[:12])
    if not os.path.isdir(path):
        subprocess.run(["git", "-C", TOP, "worktree", "add", "--detach", path, sha], check=True, capture_output=True)
    return sha[:12], path


def changed_counts(stdout):
    """{host: changed} from the PLAY RECAP of an ansible-playbook run (tools/bench_engines.py reads the recap)."""
    return {host: counts["changed"] for host, counts in recap(stdout).items()}


def run(tree, inventory, settle=False):
    """(wall seconds, controller CPU seconds, hosts) of one site.yml run from ``tree`` against ``inventory``; exits
    when it failed or (unless ``settle``: a run that puts the revision's own files back) changed anything. The CPU
    is ansible-playbook's and its workers' and the ssh or docker clients they start (user + sys of the children this
    process waited for), not the SSH masters ControlPersist leaves running, nor the hosts' own work."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(tree, "ansible.cfg"))
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "site.yml", "-i", inventory], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    changed = changed_counts(proc.stdout)
    if proc.returncode != 0 or not changed or (any(changed.values()) and not settle):
        sys.exit("bench-pair: site.yml from %s: rc %d, changed %s; not a no-op rerun:\n%s"
                 % (tree, proc.returncode, changed, proc.stdout[-3000:] + proc.stderr[-2000:]))
    return seconds, cpu, len([host for host in changed if host != "localhost"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("before")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settle", action="store_true",
                        help="an unmeasured run of each revision before each measured one (it may change things)")
    parser.add_argument("--inventory", default="inventories/sim",
                        help="relative to each checkout (default inventories/sim)")
    args = parser.parse_args(argv)
    before_sha, before_tree = worktree(args.before)
    after_sha = subprocess.run(["git", "-C", TOP, "rev-parse", "--short=12", "HEAD"], check=True,
                               capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", TOP, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    after_label = after_sha + (" + uncommitted changes" if dirty else "")
    times = {"before": [], "after": []}
    cpus = {"before": [], "after": []}
    hosts = 1
    for i in range(args.runs):
        for which, tree in (("before", before_tree), ("after", TOP)):
            if args.settle:
                settled = run(tree, args.inventory, settle=True)
                print("bench-pair: run %d %s settled in %.1f s" % (i + 1, which, settled[0]), file=sys.stderr)
            seconds, cpu, hosts = run(tree, args.inventory)
            times[which].append(seconds)
            cpus[which].append(cpu)
            print("bench-pair: run %d %s %.1f s, controller CPU %.1f s" % (i + 1, which, seconds, cpu), file=sys.stderr)
    print("| no-op rerun of site.yml, in turns on the same fleet | min | median | runs (in order) "
          "| controller CPU (median) | per host (%d hosts) |" % hosts)
    print("|---|---|---|---|---|---|")
    for which, label in (("before", before_sha), ("after", after_label)):
        t = times[which]
        cpu = statistics.median(cpus[which])
        runs = ", ".join("%.1f" % x for x in t)
        print("| %s | %.1f s | %.1f s | %s | %.1f s | %.1f s |"
              % (label, min(t), statistics.median(t), runs, cpu, cpu / max(hosts, 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
