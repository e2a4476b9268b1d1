#!/usr/bin/env python3
"""Playbook runs through ansible-runner, read from its structured events.

Shared by the preflight cases (tests/preflight/run.py), ``make bench``
(tools/bench.py) and their unit tests: a run is driven with
``ansible_runner.run`` and judged on its events and stats (failed tasks with
host and message, changed/ok counts per host, plays started), never on text
scraped from the terminal.

As a script it records the events of one run for the unit tests:

    python3 tools/runner_events.py --record OUT.jsonl PLAYBOOK -i INVENTORY [-e ...] [--check]

writes one event per line (counter order), with this checkout's path replaced
by ``$REPO`` so the recording does not depend on where it was made.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_MARK = "$REPO"

# Per-host counters of ansible-runner's stats (playbook_on_stats), in recap order.
STAT_KEYS = ("ok", "changed", "dark", "failures", "skipped", "rescued", "ignored")


class Run:
    """One finished playbook run: exit code, status, events (counter order), stats and stdout."""

    def __init__(self, rc, status, events, stats, stdout=""):
        self.rc = rc
        self.status = status
        self.events = events
        self.stats = stats or {}
        self.stdout = stdout


def run_playbook(playbook, inventory, extra_vars_files=(), extra_vars=None, check=False, cwd=TOP, quiet=True, tags=None,
                 limit=None):
    """ansible-playbook PLAYBOOK -i INVENTORY through ansible-runner; returns a Run.

    Runs in ``cwd`` with this process's environment (ANSIBLE_CONFIG included), in
    a private data directory that is removed afterwards.
    """
    args = []
    for path in extra_vars_files:
        args += ["-e", "@" + path]
    for key, value in (extra_vars or {}).items():
        args += ["-e", "%s=%s" % (key, value)]
    if check:
        args.append("--check")
    if tags:
        args += ["--tags", tags]
    if limit:
        args += ["--limit", limit]
    import ansible_runner  # the controller venv has it (requirements.txt); imported late so parsing needs none

    private = tempfile.mkdtemp(prefix="sparkfleet-runner.")
    try:
        runner = ansible_runner.run(private_data_dir=private, project_dir=cwd, playbook=os.path.abspath(playbook),
                                    inventory=os.path.abspath(inventory), cmdline=shlex.join(args), quiet=quiet)
        events = sorted(runner.events, key=lambda event: event.get("counter", 0))
        with runner.stdout as handle:
            stdout = handle.read()
        return Run(runner.rc, runner.status, events, runner.stats, stdout)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def timed_run(playbook, inventory, what, tool, **kwargs):
    """:func:`run_playbook`, timed: ``(seconds, run)``. A failed run prints each failed task as
    ``TOOL: WHAT failed on HOST: TASK: MSG`` on stderr and exits (the benches' figures are of passing runs)."""
    start = time.monotonic()
    run = run_playbook(playbook, inventory, **kwargs)
    seconds = time.monotonic() - start
    if run.rc != 0:
        for failure in failed_tasks(run.events):
            print("%s: %s failed on %s: %s: %s" % (tool, what, failure["host"], failure["task"], failure["msg"]),
                  file=sys.stderr)
        raise SystemExit("%s: %s failed (rc %d)" % (tool, what, run.rc))
    return seconds, run


def load_events(path):
    """Events of a recording written by --record (one JSON object per line)."""
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def stats_of(events):
    """The per-host counters of the run's playbook_on_stats event ({} if it never got there)."""
    for event in reversed(events):
        if event.get("event") == "playbook_on_stats":
            data = event.get("event_data", {})
            return {key: dict(data.get(key) or {}) for key in STAT_KEYS + ("processed",)}
    return {}


def counts_per_host(stats):
    """{host: {ok, changed, unreachable, failed, skipped, rescued, ignored}} from ansible-runner's stats."""
    hosts = set()
    for key in STAT_KEYS + ("processed",):
        hosts.update((stats.get(key) or {}).keys())
    names = {"dark": "unreachable", "failures": "failed"}
    return {host: {names.get(key, key): int((stats.get(key) or {}).get(host, 0)) for key in STAT_KEYS}
            for host in sorted(hosts)}


def changed_hosts(stats):
    """{host: changed} for every host that changed something."""
    return {host: n for host, n in sorted((stats.get("changed") or {}).items()) if n}


def plays_started(events):
    """Names of the plays that started, in order."""
    return [event["event_data"].get("play", "") for event in events if event.get("event") == "playbook_on_play_start"]


def _message(result):
    for key in ("msg", "stderr", "reason"):
        if result.get(key):
            return str(result[key])
    loop = [item for item in result.get("results") or [] if isinstance(item, dict) and item.get("failed")]
    return "\n".join(_message(item) for item in loop) or "failed"


def failed_tasks(events):
    """[{host, task, play, msg}] of every failed (not ignored) or unreachable task result."""
    out = []
    for event in events:
        data = event.get("event_data", {})
        if event.get("event") == "runner_on_failed" and data.get("ignore_errors"):
            continue
        if event.get("event") in ("runner_on_failed", "runner_on_unreachable"):
            out.append({"host": data.get("host", ""), "task": data.get("task", ""), "play": data.get("play", ""),
                        "msg": _message(data.get("res") or {})})
    return out


def task_results(events, task):
    """{host: result} of the task named ``task`` that ran fine (a run_once task answers for its first host)."""
    return dict((event["event_data"].get("host", ""), event["event_data"].get("res") or {}) for event in events
                if event.get("event") == "runner_on_ok" and event["event_data"].get("task") == task)


def event_hosts(events):
    """Every host some task ran on."""
    return sorted(set(event["event_data"]["host"] for event in events
                      if event.get("event", "").startswith("runner_on_") and event["event_data"].get("host")))


def failure_text(events):
    """Everything the failed tasks said, one 'host: task: msg' block per failure."""
    return "\n".join("%s: %s: %s" % (f["host"], f["task"], f["msg"]) for f in failed_tasks(events))


def _scrub(value, top):
    if isinstance(value, str):
        return value.replace(top, REPO_MARK)
    if isinstance(value, list):
        return [_scrub(item, top) for item in value]
    if isinstance(value, dict):
        return {key: _scrub(item, top) for key, item in value.items()}
    return value


def record(out, playbook, inventory, extra_vars=(), check=False):
    """Run a playbook and write its events to OUT as JSON lines; returns the run's rc."""
    run = run_playbook(playbook, inventory, check=check, quiet=True,
                       extra_vars_files=[e[1:] for e in extra_vars if e.startswith("@")],
                       extra_vars=dict(e.split("=", 1) for e in extra_vars if not e.startswith("@")))
    with open(out, "w") as handle:
        for event in run.events:
            handle.write(json.dumps(_scrub(event, TOP), sort_keys=True) + "\n")
    return run.rc


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--record", required=True, metavar="OUT.jsonl")
    parser.add_argument("playbook")
    parser.add_argument("-i", dest="inventory", required=True)
    parser.add_argument("-e", dest="extra_vars", action="append", default=[])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    rc = record(args.record, args.playbook, args.inventory, args.extra_vars, args.check)
    print("%s: %d events, ansible-playbook rc=%d" % (args.record, len(load_events(args.record)), rc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
