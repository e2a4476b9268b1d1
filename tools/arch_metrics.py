#!/usr/bin/env python3
"""Shape of the code base, for the architecture notes (docs/architecture.md).

Prints, for the checkout it is run in (or the directory given):
* the share of YAML lines under roles/ that are Jinja statements ({% ... %});
* the lines under roles/ and under plugins/ (Python);
* the filter files that only register a filter another file implements;
* the places that read the fleet plan with a fallback (``sparkfleet_plan | default(none)``);
* the files that restate the rule book's vLLM pin or Ray's default GCS port (6379) outside their home.

    python3 tools/arch_metrics.py [DIR]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys


def tracked(top, *paths):
    out = subprocess.run(["git", "-C", top, "ls-files", *paths], capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines() if os.path.isfile(os.path.join(top, p))]


def lines(top, path):
    with open(os.path.join(top, path), encoding="utf-8", errors="replace") as handle:
        return handle.read().splitlines()


def main(top):
    top = os.path.abspath(top)
    yml = [p for p in tracked(top, "roles") if p.endswith((".yml", ".yaml"))]
    yml_lines = [line for p in yml for line in lines(top, p)]
    statements = [line for line in yml_lines if "{%" in line]
    role_lines = sum(len(lines(top, p)) for p in tracked(top, "roles"))
    plugin_py = [p for p in tracked(top, "plugins") if p.endswith(".py")]
    plugin_lines = sum(len(lines(top, p)) for p in plugin_py)
    register_only = [p for p in plugin_py if p.startswith("plugins/filter/")
                     and re.search(r"^from ansible_collections\S* import \w+\s*$", "\n".join(lines(top, p)), re.M)
                     and not re.search(r"^def ", "\n".join(lines(top, p)), re.M)]
    fallbacks = [p for p in tracked(top, "roles", "playbooks")
                 if "sparkfleet_plan | default(none)" in "\n".join(lines(top, p))]
    sys.path.insert(0, os.path.join(top, "plugins", "module_utils"))
    import rulebook  # noqa: E402  (the checkout's own)
    pin = rulebook.setting("vllm_version")
    rest = [p for p in tracked(top, "roles", "plugins", "playbooks", "tests", "inventories", "molecule")
            if not p.endswith((".json", ".txt", ".jsonl"))]
    pin_files = [p for p in rest if re.search(r"\b%s\b" % re.escape(pin), "\n".join(lines(top, p)))
                 and not p.endswith("rulebook.py") and not p.endswith("vllm_release.py")]
    gcs_files = [p for p in rest if re.search(r"\b6379\b", "\n".join(lines(top, p)))]
    print("Jinja statements in roles/ YAML: %d of %d lines (%.1f%%)" % (
        len(statements), len(yml_lines), 100.0 * len(statements) / max(1, len(yml_lines))))
    print("lines: roles/ %d, plugins/ (Python) %d" % (role_lines, plugin_lines))
    print("filter files that only register another file's filter: %d" % len(register_only))
    print("plan read with a fallback (sparkfleet_plan | default(none)): %d files" % len(fallbacks))
    for p in fallbacks:
        print("  " + p)
    print("files restating the vLLM pin %s (rulebook.py, vllm_release.py aside): %d" % (pin, len(pin_files)))
    for p in pin_files:
        print("  " + p)
    print("files naming Ray's GCS port 6379: %d" % len(gcs_files))
    for p in gcs_files:
        print("  " + p)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
