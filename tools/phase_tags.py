#!/usr/bin/env python3
"""Run site.yml once for each phase tag of the roles alone (`--tags nccl_build`, `--tags vllm_service_configure`,
...), against a fleet that site.yml converged, and fail unless every run passes and changes nothing.

A role's phase tag is one of its documented ways in: a user reruns one phase after fixing something by hand. A phase
that reads what another phase of its role computed (a fact of its preflight, a result its install registered) fails
when it runs alone, and no whole run shows it. The tags come from `ansible-playbook site.yml --list-tags`, so a
new phase is covered without being listed here: a phase tag is one that starts with a role's name and `_`.

    python3 tools/phase_tags.py [-i INVENTORY]...   (after `make demo`: -i inventories/sim, the default)

Prints a table (tag, result, changed per host, seconds); the tail of each failed run follows it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

from bench_engines import recap  # tools/: reads a coloured recap too
from molecule_jobs import ANSI  # tools/

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG_LINE = re.compile(r"TASK TAGS: \[([^\]]*)\]")


def phase_tags(list_tags_stdout, roles):
    """The phase tags of ROLES among the tags `ansible-playbook --list-tags` printed, sorted."""
    tags = set()
    for match in TAG_LINE.finditer(list_tags_stdout):
        tags.update(tag.strip() for tag in match.group(1).split(",") if tag.strip())
    return sorted(tag for tag in tags if any(tag.startswith(role + "_") for role in roles))


def roles():
    return sorted(name for name in os.listdir(os.path.join(TOP, "roles"))
                  if os.path.isdir(os.path.join(TOP, "roles", name, "tasks")))


def playbook(inventories, *extra):
    argv = ["ansible-playbook", "site.yml"] + [arg for inv in inventories for arg in ("-i", inv)] + list(extra)
    # A caller's own configuration stays (a Molecule verify runs this with the scenario's); else this checkout's.
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")  # plain text in the failed runs' tails
    env.setdefault("ANSIBLE_CONFIG", os.path.join(TOP, "ansible.cfg"))
    return subprocess.run(argv, cwd=TOP, env=env, capture_output=True, text=True, check=False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("-i", "--inventory", action="append", dest="inventories",
                        help="an inventory source (repeatable; default inventories/sim)")
    args = parser.parse_args(argv)
    inventories = args.inventories or ["inventories/sim"]
    listed = playbook(inventories, "--list-tags")
    if listed.returncode != 0:
        sys.exit("phase-tags: --list-tags failed:\n" + listed.stdout[-2000:] + listed.stderr[-2000:])
    tags = phase_tags(ANSI.sub("", listed.stdout), roles())
    if not tags:
        sys.exit("phase-tags: no phase tag found in:\n" + listed.stdout[-2000:])
    rows, failed = [], []
    for tag in tags:
        start = time.monotonic()
        proc = playbook(inventories, "--tags", tag)
        counts = {host: c["changed"] for host, c in recap(proc.stdout).items() if host != "localhost"}
        ok = proc.returncode == 0 and bool(counts) and not any(counts.values())
        verdict = "passed" if ok else ("FAILED (rc %d)" % proc.returncode if proc.returncode or not counts
                                       else "CHANGED something")
        rows.append("| %s | %s | %s | %.0f |" % (tag, verdict,
                                                 ", ".join("%s=%d" % item for item in sorted(counts.items())),
                                                 time.monotonic() - start))
        if not ok:
            failed.append((tag, proc))
    print("| phase tag, run alone | result | changed | seconds |\n|---|---|---|---|")
    print("\n".join(rows))
    for tag, proc in failed:
        print("\n=== --tags %s (rc %d):\n%s" % (tag, proc.returncode, (proc.stdout + proc.stderr)[-3000:]))
    print("\n%d phase tag(s), %d failed or changed something" % (len(tags), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
