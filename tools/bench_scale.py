#!/usr/bin/env python3
"""Scale, measured (issue 12): the host-level stages of site.yml (preflight and its
facts, driver, network, nccl: ``--tags driver,network,nccl``; no vLLM, eight vLLM
processes do not fit this machine) on fleets of simulated Sparks of each size in
``--hosts`` (default 2 and 8): one first converge, then ``--runs`` no-op reruns over each
connection of ``--connections`` in turns (ssh, docker, ssh, docker, ...: the machine's drift
falls on both alike), each of which must change nothing.

The connections, as inventories/sim has them: ``ssh`` (OpenSSH, as users reach Sparks:
each host's key and ssh_config entry from tests/sim/create.yml, ControlPersist, pipelining;
the first converge runs over it) and ``docker`` (``docker exec``, the variables of
tests/sim/docker-connection.yml over those).

Beside each wall time it records the controller's CPU time (ansible-playbook, its
forks and the ssh or docker clients they start: every process of the run on this side
of the connection, except the SSH masters ControlPersist leaves running, which detach)
and how busy the machine's processors were (the controller and every simulated host
share them), so the table says whether the cores are what limits it.

The hosts are containers of the sim harness (tests/sim/create.yml) named
scale-bench-N with the stand-ins of tests/sim/hostlevel_prepare.yml, the inventory's
variables those of inventories/sim without its models; each fleet is removed after
its runs. Prints the markdown table on stdout, one line per run on stderr.

    python3 tools/bench_scale.py [--hosts 2,8] [--runs 3] [--forks N] [--connections ssh,docker]
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

import yaml

import runner_events

TOP = runner_events.TOP
PREFIX = "scale-bench"
TAGS = "driver,network,nccl"
SITE = os.path.join(TOP, "site.yml")
# What inventories/sim gives its hosts, except the models and the Ray cluster.
SIM_GROUP_VARS = ("driver.yml", "fabric.yml", "nccl.yml")
# How inventories/sim reaches its hosts (its sparks variables), and the source that switches it to docker exec.
SIM_HOSTS = os.path.join(TOP, "inventories", "sim", "hosts.yml")
DOCKER_OVERLAY = os.path.join(TOP, "tests", "sim", "docker-connection.yml")
CONNECTIONS = ("ssh", "docker")


def fleet_vars(hosts):
    return {"sim_prefix": PREFIX, "sim_network": PREFIX + "-fabric",
            "sim_platforms": [{"name": "%s-%d" % (PREFIX, i + 1)} for i in range(hosts)]}


def _sparks_vars(path):
    with open(path) as handle:
        return yaml.safe_load(handle)["all"]["children"]["sparks"]["vars"]


def connection_vars(connection="ssh"):
    """The sparks group's connection variables, as inventories/sim has them: ``ssh`` (its own: ansible.builtin.ssh,
    root, ``-F {{ sim_ssh_config }}``), ``docker`` (tests/sim/docker-connection.yml's over those, as
    ``-i inventories/sim -i tests/sim/docker-connection.yml`` gives them)."""
    if connection not in CONNECTIONS:
        raise ValueError("unknown connection %r (known: %s)" % (connection, ", ".join(CONNECTIONS)))
    found = dict(_sparks_vars(SIM_HOSTS))
    if connection == "docker":
        found.update(_sparks_vars(DOCKER_OVERLAY))
    return found


def inventory(directory, hosts, connection="ssh"):
    """The bench fleet reached over CONNECTION (connection_vars), with inventories/sim's host-level variables:
    DIRECTORY/hosts-CONNECTION.json; the inventories of both connections share DIRECTORY/group_vars."""
    names = ["%s-%d" % (PREFIX, i + 1) for i in range(hosts)]
    data = {"sparks": {"hosts": dict((name, {}) for name in names), "vars": connection_vars(connection)}}
    path = os.path.join(directory, "hosts-%s.json" % connection)
    with open(path, "w") as handle:
        json.dump(data, handle)
    group_vars = os.path.join(directory, "group_vars")
    if not os.path.isdir(group_vars):
        os.makedirs(os.path.join(group_vars, "sparks"))
        os.symlink(os.path.join(TOP, "tests", "sim", "group_vars", "all"), os.path.join(group_vars, "all"))
        for name in SIM_GROUP_VARS:
            os.symlink(os.path.join(TOP, "inventories", "sim", "group_vars", "sparks", name),
                       os.path.join(group_vars, "sparks", name))
    return path


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


def measure(hosts, runs, scratch, connections=CONNECTIONS):
    """{connection: {noop: [(wall, cpu)], busy: [share], ok, and first (wall, cpu) for the first connection, which
    converges}} for one fleet size: the no-op reruns over each connection in turns, on the same containers."""
    directory = os.path.join(scratch, str(hosts))
    os.makedirs(directory)
    invs = dict((connection, inventory(directory, hosts, connection)) for connection in connections)
    inv = invs[connections[0]]
    fleet = os.path.join(directory, "fleet.json")
    with open(fleet, "w") as handle:
        json.dump(fleet_vars(hosts), handle)
    sim = os.path.join(TOP, "tests", "sim")
    figures = dict((connection, {"noop": [], "busy": []}) for connection in connections)
    try:
        runner_events.timed_run(os.path.join(sim, "destroy.yml"), inv, "destroy", "bench-scale", extra_vars_files=[fleet])
        runner_events.timed_run(os.path.join(sim, "create.yml"), inv, "create", "bench-scale", extra_vars_files=[fleet])
        runner_events.timed_run(os.path.join(sim, "hostlevel_prepare.yml"), inv, "stand-ins", "bench-scale")
        wall, cpu, busy, run = timed(SITE, inv, "first converge at %d" % hosts, tags=TAGS)
        figures[connections[0]]["first"] = (wall, cpu)
        print("bench-scale: %d hosts, first converge over %s: %.1f s, controller CPU %.1f s, changed %d"
              % (hosts, connections[0], wall, cpu, changed_total(run)), file=sys.stderr)
        for number in range(1, runs + 1):
            for connection in connections:
                wall, cpu, busy, run = timed(SITE, invs[connection], "no-op rerun over %s at %d" % (connection, hosts),
                                             tags=TAGS)
                changed = changed_total(run)
                print("bench-scale: %d hosts, no-op rerun %d over %s: %.1f s, controller CPU %.1f s, machine busy "
                      "%.0f%%, changed %d, ok per host %d" % (hosts, number, connection, wall, cpu, 100 * busy, changed,
                                                              ok_per_host(run)), file=sys.stderr)
                if changed:
                    raise SystemExit("bench-scale: the no-op rerun over %s at %d hosts changed %d task(s)"
                                     % (connection, hosts, changed))
                figures[connection]["noop"].append((wall, cpu))
                figures[connection]["busy"].append(busy)
                figures[connection]["ok"] = ok_per_host(run)
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
    """The markdown table of {hosts: measure()}: a row per fleet size and connection, each no-op compared with the
    smallest fleet's over the same connection."""
    base = min(results)
    lines = ["| host-level stages (--tags %s), forks %s | connection | first converge | no-op min | no-op median "
             "| controller CPU per no-op (median) | controller CPU per host | machine busy during no-op (median, %d cores) "
             "| tasks ok per host | no-op vs %d hosts |" % (TAGS, forks, os.cpu_count(), base),
             "|---|---|---|---|---|---|---|---|---|---|"]
    for hosts in sorted(results):
        for connection, figures in results[hosts].items():
            walls = [w for w, dummy in figures["noop"]]
            cpus = [c for dummy, c in figures["noop"]]
            base_median = statistics.median(w for w, dummy in results[base][connection]["noop"])
            first = "%.1f s" % figures["first"][0] if "first" in figures else "-"
            lines.append("| %d hosts, %d runs | %s | %s | %.1f s | %.1f s | %.1f s | %.1f s | %.0f%% | %d | %.2fx |" % (
                hosts, runs, connection, first, min(walls), statistics.median(walls), statistics.median(cpus),
                statistics.median(cpus) / hosts, 100 * statistics.median(figures["busy"]), figures["ok"],
                statistics.median(walls) / base_median))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--hosts", default="2,8", help="fleet sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--forks", type=int, default=None, help="ansible's forks (default: ansible.cfg's)")
    parser.add_argument("--connections", default=",".join(CONNECTIONS),
                        help="how the controller reaches the hosts, comma-separated, measured in turns; the first "
                             "converges (default: %(default)s; known: " + ", ".join(CONNECTIONS) + ")")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    connections = [c for c in args.connections.split(",") if c]
    if not connections or len(set(connections)) != len(connections) or set(connections) - set(CONNECTIONS):
        parser.error("--connections takes %s, each once" % " and/or ".join(CONNECTIONS))
    sizes = sorted(int(n) for n in args.hosts.split(","))
    scratch = tempfile.mkdtemp(prefix="sparkfleet-bench-scale.")
    saved = os.environ.get("ANSIBLE_FORKS")
    if args.forks:
        os.environ["ANSIBLE_FORKS"] = str(args.forks)
    try:
        forks = configured_forks()
        results = dict((hosts, measure(hosts, args.runs, scratch, connections)) for hosts in sizes)
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
