#!/usr/bin/env python3
"""Runs playbooks/preflight.yml against every example inventory and every valid
but unusual inventory of tests/preflight/valid (must pass), and every broken
inventory of tests/preflight/cases (must fail with the expected words), with
hosts read locally from GB10 fixtures. A case with ``site: true`` runs the whole
site.yml (in check mode) instead, to prove that it stops at preflight: no task of
a later play runs and no host changes. Exits non-zero on any miss.
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


def preflight(inventory, fixture="nominal", site=False):
    playbook = os.path.join(TOP, "site.yml") if site else os.path.join(TOP, "playbooks", "preflight.yml")
    cmd = ["ansible-playbook", playbook, "-i", inventory] + (["--check"] if site else []) + [
           "-e", "@" + os.path.join(HERE, "offline.yml"),
           "-e", "test_fixture_root=" + os.path.join(TOP, "tests", "fixtures", "gb10", fixture)]
    proc = subprocess.run(cmd, cwd=TOP, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def changed_hosts(output):
    return re.findall(r"^(\S+)\s+: ok=\d+\s+changed=([1-9]\d*)", output, re.M)


def later_plays(output):
    """Plays of site.yml after Preflight that started (none may, when preflight fails)."""
    return [play for play in re.findall(r"^PLAY \[(.*)\]", output, re.M) if play != "Preflight"]


def main():
    failures = []
    for name in EXAMPLES:
        rc, out = preflight(os.path.join(TOP, "inventories", name))
        ok = rc == 0 and not changed_hosts(out)
        print("%-4s example  %s" % ("ok" if ok else "FAIL", name))
        if not ok:
            failures.append((name, out))
    for name in sorted(os.listdir(os.path.join(HERE, "valid"))):
        rc, out = preflight(os.path.join(HERE, "valid", name))
        ok = rc == 0 and not changed_hosts(out)
        print("%-4s valid    %s" % ("ok" if ok else "FAIL", name))
        if not ok:
            failures.append((name, out))
    with open(os.path.join(HERE, "cases.yml")) as handle:
        cases = yaml.safe_load(handle)
    for name, case in sorted(cases.items()):
        rc, out = preflight(os.path.join(HERE, "cases", name, case.get("inventory", "hosts.yml")),
                            case.get("fixture", "nominal"), case.get("site", False))
        missing = [word for word in case["expect"] if word not in out]
        # Words that must never show (a secret written into the inventory by mistake).
        missing += ["never %r" % word for word in case.get("never", []) if word in out]
        if case.get("site") and later_plays(out):
            missing.append("no play after Preflight (ran: %s)" % ", ".join(later_plays(out)))
        ok = rc != 0 and not missing and not changed_hosts(out)
        print("%-4s broken   %s%s" % ("ok" if ok else "FAIL", name, "" if ok else " (rc=%d, missing %s)" % (rc, missing)))
        if not ok:
            failures.append((name, out))
    for name, out in failures:
        print("\n===== %s\n%s" % (name, out[-4000:]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
