#!/usr/bin/env python3
"""Run make targets JOBS at a time, each one's output kept in build/steps/TARGET.log and printed whole when it
ends (tools/molecule_jobs.py's queue, with `make TARGET` as the command), then a table of their seconds and, for each
one that failed, where it stopped. After a failure no new target starts.

`make test` runs its checks that read the tree and start nothing (lint, sanity, changelog-check, contract,
monitoring, build, docs-site-test) two at a time: run one after another they used 254 CPU-seconds over 221 s of
wall time on the 2-core test machine, most of them on one core each.

    python3 tools/make_jobs.py [--jobs 2] TARGET...
"""

from __future__ import annotations

import argparse
import os
import sys

import molecule_jobs  # tools/

LOGS = os.path.join(molecule_jobs.TOP, "build", "steps")
# Seconds each target took alone on the 2-core test machine (2026-11-29): only the order they start in, longest
# first. A target not listed starts first.
TYPICAL_SECONDS = {
    "sanity": 67,
    "contract": 73,
    "lint": 49,
    "docs-site-test": 32,
    "changelog-check": 5,
    "monitoring": 1,
    "build": 1,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--jobs", type=int, default=2, help="targets at a time (default 2)")
    parser.add_argument("targets", nargs="+")
    args = parser.parse_args(argv)
    jobs = molecule_jobs.Jobs(args.targets, args.jobs, command=lambda name: ["make", "--no-print-directory", name],
                              label="make %s", logs=LOGS, typical=TYPICAL_SECONDS)
    wall = jobs.run()
    print(jobs.summary(wall, what="target"), flush=True)
    return 1 if jobs.failed or jobs.queue else 0


if __name__ == "__main__":
    sys.exit(main())
