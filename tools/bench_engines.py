#!/usr/bin/env python3
"""The no-op rerun of site.yml on the fleet ``make demo`` left, one way of running it against another, in turns
(variant A, B, C, A, B, C, ...), so the machine's drift falls on every variant alike.

Variants (``--variants``, comma-separated):

- ``ssh``: the simulated Sparks over SSH, as users reach theirs (ControlPersist, pipelining); the default;
- ``docker``: the same hosts over ``docker exec`` (``-i tests/sim/docker-connection.yml`` laid over the inventory; an extra variable would also
  move the tasks delegated to the controller);
- ``ssh-cold``: SSH without the ``warm_plugins`` callback (each worker loads the plugins again);
- ``ssh-free``: SSH with the ``free`` strategy (``ANSIBLE_STRATEGY=free``), each host on at its own pace;
- ``ssh-mitogen``: SSH with Mitogen's ``mitogen_linear`` strategy, when the ``mitogen`` package is installed.

Each run must change nothing (its recap says changed=0 on every host), else the script stops. The figures:
wall time, controller CPU (ansible-playbook, its forked workers and the ssh or docker clients they start: the
children's rusage; not the SSH master processes ControlPersist leaves running, which detach), that CPU per host,
and the tasks per host from the recap.

``--profile`` samples one more no-op rerun (default variant) with py-spy, workers included, and prints where the
controller's CPU went, by kind of work (the top of the profile in bench/results.md).

    python3 tools/bench_engines.py [--runs 3] [--variants ssh,docker,ssh-cold] [--profile]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench_scale import children_cpu  # tools/: the same rusage of the runs' processes
from molecule_jobs import ANSI  # tools/: colour codes (a run under Molecule is coloured whatever it asks)

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARM = "sparkfleet.gb10.warm_plugins"


def _callbacks_without_warm():
    """callbacks_enabled of ansible.cfg without the warm_plugins callback."""
    with open(os.path.join(TOP, "ansible.cfg"), encoding="utf-8") as handle:
        line = re.search(r"^callbacks_enabled\s*=\s*(.+)$", handle.read(), re.M).group(1)
    return ",".join(name.strip() for name in line.split(",") if name.strip() != WARM)


def _mitogen_env():
    spec = importlib.util.find_spec("ansible_mitogen")
    if spec is None:
        return None
    strategy = os.path.join(os.path.dirname(spec.origin), "plugins", "strategy")
    return {"ANSIBLE_STRATEGY_PLUGINS": strategy, "ANSIBLE_STRATEGY": "mitogen_linear"}


INVENTORY = "inventories/sim"


def _connection_overlay(connection):
    """An inventory source that gives the sparks group another connection (a later source's group variables win;
    an extra variable would also win over the tasks delegated to the controller)."""
    handle, path = tempfile.mkstemp(prefix="sparkfleet-bench-", suffix=".yml")
    with os.fdopen(handle, "w") as out:
        out.write("all:\n  children:\n    sparks:\n      vars:\n        ansible_connection: %s\n" % connection)
    return path


def variants():
    """{name: (env, extra argv) or None where it cannot run here}."""
    mitogen = _mitogen_env()
    return {
        "ssh": ({}, []),
        "docker": ({}, ["-i", INVENTORY, "-i", os.path.join(TOP, "tests", "sim", "docker-connection.yml")]),
        "ssh-cold": ({"ANSIBLE_CALLBACKS_ENABLED": _callbacks_without_warm()}, []),
        "ssh-free": ({"ANSIBLE_STRATEGY": "free"}, []),
        # Mitogen swaps in its own connection for the short names only (ssh, docker, ...), not ansible.builtin.ssh.
        "ssh-mitogen": (mitogen, ["-i", INVENTORY, "-i", _connection_overlay("ssh")]) if mitogen else None,
    }


def recap(stdout):
    """{host: {ok, changed, skipped}} from the PLAY RECAP of an ansible-playbook run, coloured or not."""
    return {m.group(1): {"ok": int(m.group(2)), "changed": int(m.group(3)), "skipped": int(m.group(4))}
            for m in re.finditer(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=\d+\s+skipped=(\d+)",
                                 ANSI.sub("", stdout), re.M)}


def noop(name, env, extra, prefix=None):
    """(wall s, controller CPU s, recap) of one no-op rerun; exits when it failed or changed anything."""
    run_env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(TOP, "ansible.cfg"), **env)
    cpu, start = children_cpu(), time.monotonic()
    proc = subprocess.run((prefix or []) + ["ansible-playbook", "site.yml"] + extra, cwd=TOP, env=run_env,
                          capture_output=True, text=True, check=False)
    wall, cpu = time.monotonic() - start, children_cpu() - cpu
    counts = {h: c for h, c in recap(proc.stdout).items() if h != "localhost"}
    if proc.returncode != 0 or not counts or any(c["changed"] for c in counts.values()):
        raise NotANoop("bench-engines: %s: rc %d, recap %s; not a no-op rerun:\n%s"
                       % (name, proc.returncode, counts, proc.stdout[-3000:] + proc.stderr[-2000:]))
    return wall, cpu, counts


class NotANoop(Exception):
    """A run that failed or changed something: its figures are not a no-op rerun's."""


# Kinds of controller work, by a frame that marks them (first match wins, in this order).
KINDS = (
    ("plugin loading (settings from docs, filter files)",
     ("_load_config_defs", "Jinja2Loader.get_with_context", "_load_module_source")),
    ("module payload (AnsiballZ)", ("ActionBase._configure_module",)),
    ("templating: compiling", ("TemplateEngine._compile_template", "TemplateEngine._compile_expression")),
    ("templating: rendering", ("TemplateEngine.template", "TemplateEngine.evaluate_expression",
                               "TemplateEngine.evaluate_conditional")),
    ("connection (ssh, docker exec)", ("exec_command", "TaskExecutor._get_connection", "put_file", "fetch_file")),
    ("variables (get_vars)", ("VariableManager.get_vars",)),
    ("forking a worker per task and host", ("WorkerProcess.start",)),
    ("results: queue and polling", ("_wait_on_pending_results", "results_thread_main", "_process_pending_results")),
    ("callbacks", ("send_callback",)),
    ("loading playbooks and roles", ("Playbook.load", "PlaybookInclude.load", "Role.load")),
    ("heartbeat thread (progress callback)", ("CallbackModule._beat",)),
)


def profile_table(raw_path):
    """Markdown rows: share of sampled controller CPU per kind of work, in the controller and in its workers."""
    shares = collections.Counter()
    total = 0
    with open(raw_path, encoding="utf-8") as handle:
        for line in handle:
            stack, dummy, count = line.rstrip("\n").rpartition(" ")
            count = int(count)
            total += count
            frames = stack.split(";")
            where = "worker" if sum(1 for f in frames if f.startswith("process ")) > 1 else "controller"
            kind = next((k for k, marks in KINDS if any(m in f for f in frames for m in marks)), "other")
            shares[(kind, where)] += count
    rows = ["| kind of work | in the controller process | in forked workers | all |", "|---|---|---|---|"]
    kinds = [k for k, dummy in KINDS] + ["other"]
    for kind in sorted(kinds, key=lambda k: -(shares[(k, "controller")] + shares[(k, "worker")])):
        main, worker = shares[(kind, "controller")], shares[(kind, "worker")]
        if main + worker:
            rows.append("| %s | %.1f%% | %.1f%% | %.1f%% |" % (kind, 100.0 * main / total, 100.0 * worker / total,
                                                               100.0 * (main + worker) / total))
    return rows, total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variants", default="ssh,docker,ssh-cold,ssh-free,ssh-mitogen")
    parser.add_argument("--profile", action="store_true", help="also sample one no-op rerun with py-spy")
    args = parser.parse_args(argv)
    known = variants()
    chosen = [v for v in args.variants.split(",") if v]
    unknown = [v for v in chosen if v not in known]
    if unknown:
        sys.exit("bench-engines: unknown variants %s (known: %s)" % (unknown, ", ".join(known)))
    skipped = [v for v in chosen if known[v] is None]
    chosen = [v for v in chosen if known[v] is not None]
    figures = {v: [] for v in chosen}
    failed = {}
    for number in range(args.runs):
        for name in [v for v in chosen if v not in failed]:
            env, extra = known[name]
            try:
                figures[name].append(noop(name, env, extra))
            except NotANoop as ex:
                # The first variant is the baseline: without it there is nothing to compare with.
                if name == chosen[0]:
                    sys.exit(str(ex))
                print(str(ex), file=sys.stderr)
                failed[name] = str(ex).split(";", 1)[0].split(": ", 1)[1]
                continue
            print("bench-engines: run %d %s: %.1f s, controller CPU %.1f s" % (number + 1, name, *figures[name][-1][:2]),
                  file=sys.stderr)
    print("| no-op rerun of site.yml, in turns on the same fleet | wall min | wall median | controller CPU "
          "(median; SSH masters not counted) | CPU per host | tasks per host (ok + skipped) |")
    print("|---|---|---|---|---|---|")
    for name in chosen:
        if name in failed:
            print("| %s | failed (%s), see the log | | | | |" % (name, failed[name]))
            continue
        walls = [run[0] for run in figures[name]]
        cpus = [run[1] for run in figures[name]]
        counts = figures[name][-1][2]
        tasks = ", ".join("%s %d+%d" % (h, c["ok"], c["skipped"]) for h, c in sorted(counts.items()))
        print("| %s | %.1f s | %.1f s | %.1f s | %.1f s | %s |" % (
            name, min(walls), statistics.median(walls), statistics.median(cpus),
            statistics.median(cpus) / len(counts), tasks))
    for name in skipped:
        print("| %s | not run: its engine is not installed here | | | | |" % name)
    if args.profile:
        pyspy = shutil.which("py-spy")
        if not pyspy:
            sys.exit("bench-engines: --profile needs py-spy on PATH (make bench installs it)")
        raw = os.path.join(tempfile.mkdtemp(prefix="sparkfleet-profile-"), "noop.raw")
        env, extra = known[chosen[0]]
        try:
            noop(chosen[0] + " under py-spy", env, extra,
                 prefix=[pyspy, "record", "--gil", "--subprocesses", "--format", "raw", "--rate", "50", "--output", raw,
                         "--"])
        except NotANoop as ex:
            sys.exit(str(ex))
        rows, total = profile_table(raw)
        print()
        print("Where the controller's CPU went in one more no-op rerun (%s), sampled by py-spy at 50 Hz (threads "
              "holding the GIL: Python at work, not waiting) in ansible-playbook and its forked workers (%d samples):"
              % (chosen[0], total))
        print()
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
