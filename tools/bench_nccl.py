#!/usr/bin/env python3
"""NCCL built once per fleet, measured (issue 12): the nccl stage on N identical
simulated Sparks (default 4) with ``nccl_build_once: true`` (one host compiles, the
others receive its prefix over the fabric and prove it) and ``false`` (every host
compiles), each run from hosts with no installed prefix (sources, build packages and
rsync are put there by an untimed warm-up, so neither case pays for them).

The hosts are containers of the sim harness (tests/sim/create.yml) with the nccl
scenario's preparation (molecule/nccl/prepare.yml: nvcc from PyPI, the stand-in NCCL
sources); the fleet is removed at the end. The controller reaches them over SSH as
inventories/sim does (each host's key and ssh_config entry from tests/sim/create.yml), or
by ``docker exec`` with ``--connection docker``. Prints the markdown table on stdout, one
line per run on stderr; exits non-zero when a run failed or did not compile on the
expected number of hosts.

    python3 tools/bench_nccl.py [--hosts 4] [--runs 3] [--connection ssh|docker]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

import runner_events
from bench_scale import CONNECTIONS, connection_vars  # tools/: how inventories/sim reaches its hosts

TOP = runner_events.TOP
PLAYBOOK = os.path.join(TOP, "tools", "bench_nccl.yml")
PREFIX = "nccl-bench"
BUILD_TASK = "Build NCCL for "


def fleet_vars(hosts):
    return {"sim_prefix": PREFIX, "sim_network": PREFIX + "-fabric",
            "sim_platforms": [{"name": "%s-%d" % (PREFIX, i + 1)} for i in range(hosts)]}


def inventory(directory, hosts, connection="ssh"):
    """The bench fleet: reached over CONNECTION as inventories/sim reaches its hosts (bench_scale.connection_vars),
    a fabric address each, the sim's group_vars."""
    data = {"sparks": {"hosts": dict(
        ("%s-%d" % (PREFIX, i + 1), {"sparkfleet_fabric_address": "192.168.79.%d" % (11 + i)}) for i in range(hosts)),
        "vars": connection_vars(connection)}}
    with open(os.path.join(directory, "hosts.json"), "w") as handle:
        json.dump(data, handle)
    os.symlink(os.path.join(TOP, "tests", "sim", "group_vars"), os.path.join(directory, "group_vars"))
    return os.path.join(directory, "hosts.json")


def play(playbook, inv, name, extra=None, tags=None):
    """(seconds, hosts that ran the NCCL build task) of one passing run."""
    seconds, run = runner_events.timed_run(playbook, inv, name, "bench-nccl",
                                           extra_vars_files=[extra] if extra else (), tags=tags)
    compiled = sorted(e["event_data"].get("host", "") for e in run.events
                      if e.get("event") == "runner_on_ok" and e["event_data"].get("task", "").startswith(BUILD_TASK))
    return seconds, compiled


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connection", choices=CONNECTIONS, default="ssh",
                        help="how the controller reaches the hosts (default: %(default)s)")
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="sparkfleet-bench-nccl.")
    inv = inventory(scratch, args.hosts, args.connection)
    fleet = os.path.join(scratch, "fleet.json")
    with open(fleet, "w") as handle:
        json.dump(fleet_vars(args.hosts), handle)
    cases = {"once": True, "every": False}
    varsfiles = {}
    for case, once in cases.items():
        varsfiles[case] = os.path.join(scratch, case + ".json")
        with open(varsfiles[case], "w") as handle:
            json.dump({"nccl_build_once": once}, handle)
    figures = dict((case, []) for case in cases)
    try:
        play(os.path.join(TOP, "tests", "sim", "destroy.yml"), inv, "destroy", fleet)
        play(os.path.join(TOP, "tests", "sim", "create.yml"), inv, "create", fleet)
        play(os.path.join(TOP, "molecule", "nccl", "prepare.yml"), inv, "prepare")
        # Untimed: build packages, rsync and the sources on every host.
        play(PLAYBOOK, inv, "warm-up", varsfiles["every"], "role")
        for index in range(args.runs):
            for case in cases:
                play(PLAYBOOK, inv, "clean", None, "clean")
                seconds, compiled = play(PLAYBOOK, inv, case, varsfiles[case], "role")
                want = 1 if cases[case] else args.hosts
                print("bench-nccl: run %d %s: %.1f s, compiled on %s" % (index + 1, case, seconds, ", ".join(compiled)),
                      file=sys.stderr)
                if len(compiled) != want:
                    raise SystemExit("bench-nccl: %s compiled on %d hosts, expected %d" % (case, len(compiled), want))
                figures[case].append(seconds)
    finally:
        play(os.path.join(TOP, "tests", "sim", "destroy.yml"), inv, "destroy", fleet)
    labels = {"once": "nccl_build_once: true (1 host compiles, %d receive over the fabric)" % (args.hosts - 1),
              "every": "nccl_build_once: false (all %d hosts compile)" % args.hosts}
    print("| the nccl stage on %d identical hosts, %d run(s) each | min | median | runs |" % (args.hosts, args.runs))
    print("|---|---|---|---|")
    for case in cases:
        print("| %s | %.1f s | %.1f s | %s |" % (labels[case], min(figures[case]), statistics.median(figures[case]),
                                                 ", ".join("%.1f" % s for s in figures[case])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
