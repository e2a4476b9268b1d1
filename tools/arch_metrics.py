#!/usr/bin/env python3
"""Shape of the code base, for the architecture notes (docs/architecture.md).

Prints, for the checkout it is run in (or the directory given):
* the share of YAML lines under roles/ that are Jinja statements ({% ... %});
* the share of the lines of vars/ files (roles/*/vars/, playbooks/vars/) that belong to a value whose Jinja spans
  several lines (a program in a variable, re-templated at every reference);
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

import yaml


def tracked(top, *paths):
    out = subprocess.run(["git", "-C", top, "ls-files", *paths], capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines() if os.path.isfile(os.path.join(top, p))]


def lines(top, path):
    with open(os.path.join(top, path), encoding="utf-8", errors="replace") as handle:
        return handle.read().splitlines()


def multi_line_jinja(text):
    """The lines of a YAML file's Jinja expressions ({{ }} or {% %} in a scalar) that span several lines: a program in
    a variable rather than a value. A mapping or list of one-line expressions counts nothing."""
    def walk(node):
        if isinstance(node, yaml.ScalarNode):
            value = str(node.value)
            first = node.start_mark.line + (1 if node.style in ("|", ">") else 0)  # a block's text starts below
            lines_spanned = node.end_mark.line - first + (1 if node.end_mark.column else 0)
            return lines_spanned if lines_spanned > 1 and ("{{" in value or "{%" in value) else 0
        if isinstance(node, yaml.MappingNode):
            return sum(walk(key) + walk(value) for key, value in node.value)
        if isinstance(node, yaml.SequenceNode):
            return sum(walk(item) for item in node.value)
        return 0
    return sum(walk(node) for node in yaml.compose_all(text, Loader=yaml.SafeLoader) if node is not None)


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
    var_files = [p for p in tracked(top, "roles", "playbooks") if re.match(r"^(roles/[^/]+|playbooks)/vars/.*\.ya?ml$", p)]
    var_lines = sum(len(lines(top, p)) for p in var_files)
    programs = dict((p, multi_line_jinja("\n".join(lines(top, p)) + "\n")) for p in var_files)
    print("vars/ lines in Jinja expressions that span several lines: %d of %d (%.1f%%)" % (
        sum(programs.values()), var_lines, 100.0 * sum(programs.values()) / max(1, var_lines)))
    for p in sorted(p for p in programs if programs[p]):
        print("  %s: %d" % (p, programs[p]))
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
