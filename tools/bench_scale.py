#!/usr/bin/env python3
"""Scale, measured (issue 12): the host-level stages of site.yml (preflight and its
facts, driver, network, nccl: ``--tags driver,network,nccl``; no vLLM, eight vLLM
processes do not fit this machine) on fleets of simulated Sparks of each size in
``--hosts`` (default 2 and 8): one first converge, then ``--runs`` no-op reruns, each
of which must change nothing.

Beside each wall time it records the controller's CPU time (ansible-playbook, its
forks and the docker CLI they start: every process of the run on this side of the
connection) and how busy the machine's processors were (the controller and every
simulated host share them), so the table says whether the cores are what limits it.

The hosts are containers of the sim harness (tests/sim/create.yml) named
scale-bench-N with the stand-ins of tests/sim/hostlevel_prepare.yml, the inventory's
variables those of inventories/sim without its models; each fleet is removed after
its runs. Prints the markdown table on stdout, one line per run on stderr.

    python3 tools/bench_scale.py [--hosts 2,8] [--runs 3] [--forks N]
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile

import runner_events

TOP = runner_events.TOP
PREFIX = "scale-bench"
TAGS = "driver,network,nccl"
SITE = os.path.join(TOP, "site.yml")
# What inventories/sim gives its hosts, except the models and the Ray cluster.
SIM_GROUP_VARS = ("driver.yml", "fabric.yml", "nccl.yml")


def fleet_vars(hosts):
    return {"sim_prefix": PREFIX, "sim_network": PREFIX + "-fabric",
            "sim_platforms": [{"name": "%s-%d" % (PREFIX, i + 1)} for i in range(hosts)]}


def inventory(directory, hosts, forks=None):
    """The bench fleet: docker connection and inventories/sim's host-level variables."""
    names = ["%s-%d" % (PREFIX, i + 1) for i in range(hosts)]
    data = {"sparks": {"hosts": dict((name, {}) for name in names),
                       "vars": {"ansible_connection": "community.docker.docker", "ansible_user": "root"}}}
    with open(os.path.join(directory, "hosts.json"), "w") as handle:
        json.dump(data, handle)
    group_vars = os.path.join(directory, "group_vars")
    os.makedirs(os.path.join(group_vars, "sparks"))
    os.symlink(os.path.join(TOP, "tests", "sim", "group_vars", "all"), os.path.join(group_vars, "all"))
    for name in SIM_GROUP_VARS:
        os.symlink(os.path.join(TOP, "inventories", "sim", "group_vars", "sparks", name),
                   os.path.join(group_vars, "sparks", name))
    return os.path.join(directory, "hosts.json")


def machine_busy(stat="/proc/stat"):
    """(busy, total) jiffies of all processors since boot: the controller and every container share them.
    Busy: user, nice, system, irq, softirq; idle: idle and iowait (guest time is inside user already,
    steal is another machine's)."""
    with open(stat) as handle:
        fields = [int(x) for x in handle.readline().split()[1:]] + [0] * 10
    busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6]
    return busy, busy + fields[3] + fields[4]


def busy_share(before, after):
    """Share of the machine's processor time that was busy between two machine_busy() readings."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total else 0.0


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(playbook, inv, what, **kwargs):
    """(wall seconds, controller CPU seconds, machine busy share, run) of one passing run."""
    cpu, busy = children_cpu(), machine_busy()
    seconds, run = runner_events.timed_run(playbook, inv, what, "bench-scale", **kwargs)
    return seconds, children_cpu() - cpu, busy_share(busy, machine_busy()), run


def changed_total(run):
    return sum(counts["changed"] for counts in runner_events.counts_per_host(run.stats).values())


def ok_per_host(run):
    counts = runner_events.counts_per_host(run.stats)
    return max(c["ok"] for c in counts.values()) if counts else 0


def measure(hosts, runs, scratch, forks):
    """{first, noop: [(wall, cpu)], ok} for one fleet size."""
    directory = os.path.join(scratch, str(hosts))
    os.makedirs(directory)
    inv = inventory(directory, hosts)
    fleet = os.path.join(directory, "fleet.json")
    with open(fleet, "w") as handle:
        json.dump(fleet_vars(hosts), handle)
    sim = os.path.join(TOP, "tests", "sim")
    figures = {"noop": [], "busy": []}
    try:
        runner_events.timed_run(os.path.join(sim, "destroy.yml"), inv, "destroy", "bench-scale", extra_vars_files=[fleet])
        runner_events.timed_run(os.path.join(sim, "create.yml"), inv, "create", "bench-scale", extra_vars_files=[fleet])
        runner_events.timed_run(os.path.join(sim, "hostlevel_prepare.yml"), inv, "stand-ins", "bench-scale")
        wall, cpu, busy, run = timed(SITE, inv, "first converge at %d" % hosts, tags=TAGS)
        figures["first"] = (wall, cpu)
        print("bench-scale: %d hosts, first converge: %.1f s, controller CPU %.1f s, changed %d"
              % (hosts, wall, cpu, changed_total(run)), file=sys.stderr)
        for number in range(1, runs + 1):
            wall, cpu, busy, run = timed(SITE, inv, "no-op rerun at %d" % hosts, tags=TAGS)
            changed = changed_total(run)
            print("bench-scale: %d hosts, no-op rerun %d: %.1f s, controller CPU %.1f s, machine busy %.0f%%, "
                  "changed %d, ok per host %d" % (hosts, number, wall, cpu, 100 * busy, changed, ok_per_host(run)),
                  file=sys.stderr)
            if changed:
                raise SystemExit("bench-scale: the no-op rerun at %d hosts changed %d task(s)" % (hosts, changed))
            figures["noop"].append((wall, cpu))
            figures["busy"].append(busy)
            figures["ok"] = ok_per_host(run)
    finally:
        runner_events.timed_run(os.path.join(sim, "destroy.yml"), inv, "destroy", "bench-scale", extra_vars_files=[fleet])
    return figures


def configured_forks():
    """forks as ansible-playbook will use them here: ANSIBLE_FORKS, else ansible.cfg's, else Ansible's 5."""
    if os.environ.get("ANSIBLE_FORKS"):
        return int(os.environ["ANSIBLE_FORKS"])
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(os.environ.get("ANSIBLE_CONFIG") or os.path.join(TOP, "ansible.cfg"))
    return parser.getint("defaults", "forks", fallback=5)


def table(results, runs, forks):
    base = min(results)
    base_median = statistics.median(w for w, dummy in results[base]["noop"])
    lines = ["| host-level stages (--tags %s), forks %s | first converge | no-op min | no-op median "
             "| controller CPU per no-op (median) | machine busy during no-op (median, %d cores) | tasks ok per host "
             "| no-op vs %d hosts |" % (TAGS, forks, os.cpu_count(), base),
             "|---|---|---|---|---|---|---|---|"]
    for hosts in sorted(results):
        figures = results[hosts]
        walls = [w for w, dummy in figures["noop"]]
        cpus = [c for dummy, c in figures["noop"]]
        lines.append("| %d hosts, %d runs | %.1f s | %.1f s | %.1f s | %.1f s | %.0f%% | %d | %.2fx |" % (
            hosts, runs, figures["first"][0], min(walls), statistics.median(walls), statistics.median(cpus),
            100 * statistics.median(figures["busy"]), figures["ok"], statistics.median(walls) / base_median))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--hosts", default="2,8", help="fleet sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--forks", type=int, default=None, help="ansible's forks (default: ansible.cfg's)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    sizes = sorted(int(n) for n in args.hosts.split(","))
    scratch = tempfile.mkdtemp(prefix="sparkfleet-bench-scale.")
    saved = os.environ.get("ANSIBLE_FORKS")
    if args.forks:
        os.environ["ANSIBLE_FORKS"] = str(args.forks)
    try:
        forks = configured_forks()
        results = dict((hosts, measure(hosts, args.runs, scratch, args.forks)) for hosts in sizes)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if saved is None:
            os.environ.pop("ANSIBLE_FORKS", None)
        else:
            os.environ["ANSIBLE_FORKS"] = saved
    print(table(results, args.runs, forks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
