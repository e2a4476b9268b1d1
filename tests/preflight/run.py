#!/usr/bin/env python3
"""Runs playbooks/preflight.yml against every example inventory (must pass) and
every broken inventory of tests/preflight/cases (must fail with the expected
words), with hosts read locally from GB10 fixtures. Exits non-zero on any miss.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import yaml

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(TOP, "tests", "preflight")
EXAMPLES = ["two-spark", "dual-independent", "three-spark", "single-spark", "sim"]


def preflight(inventory, fixture="nominal"):
    cmd = ["ansible-playbook", os.path.join(TOP, "playbooks", "preflight.yml"), "-i", inventory,
           "-e", "@" + os.path.join(HERE, "offline.yml"),
           "-e", "test_fixture_root=" + os.path.join(TOP, "tests", "fixtures", "gb10", fixture)]
    proc = subprocess.run(cmd, cwd=TOP, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def changed_hosts(output):
    return re.findall(r"^(\S+)\s+: ok=\d+\s+changed=([1-9]\d*)", output, re.M)


def main():
    failures = []
    for name in EXAMPLES:
        rc, out = preflight(os.path.join(TOP, "inventories", name))
        ok = rc == 0 and not changed_hosts(out)
        print("%-4s example  %s" % ("ok" if ok else "FAIL", name))
        if not ok:
            failures.append((name, out))
    with open(os.path.join(HERE, "cases.yml")) as handle:
        cases = yaml.safe_load(handle)
    for name, case in sorted(cases.items()):
        rc, out = preflight(os.path.join(HERE, "cases", name, "hosts.yml"), case.get("fixture", "nominal"))
        missing = [word for word in case["expect"] if word not in out]
        ok = rc != 0 and not missing and not changed_hosts(out)
        print("%-4s broken   %s%s" % ("ok" if ok else "FAIL", name, "" if ok else " (rc=%d, missing %s)" % (rc, missing)))
        if not ok:
            failures.append((name, out))
    for name, out in failures:
        print("\n===== %s\n%s" % (name, out[-4000:]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
