# -*- coding: utf-8 -*-
"""The contract checks themselves: pure functions over what the collection sets and
what an upstream release knows, so they are unit-tested with small made-up releases
(tests/unit/contract/test_checker.py) and run on the real ones (tests/contract/)."""

from __future__ import annotations

import re

# Environment variable families and the release that must read them. Other variables
# the units set (HOME, LD_LIBRARY_PATH, GLOO_*, UCX_*, TRITON_*, HF_*, TORCHDYNAMO_*)
# belong to programs whose pinned sources this contract does not carry; unchecked()
# lists them so the test report says so.
FAMILIES = (("VLLM_", "vllm"), ("RAY_", "ray"), ("NCCL_", "nccl"))


def family(name):
    for prefix, release in FAMILIES:
        if name.startswith(prefix):
            return release
    return None


def flag_of(error):
    """The option an argparse/click error names ('--kv-cache-dtype'), or None."""
    match = re.search(r"(--[A-Za-z0-9][A-Za-z0-9_-]*)", error or "")
    return match.group(1) if match else None


def _origins(origins, limit=3):
    origins = sorted(set(origins))
    text = "; ".join(origins[:limit])
    if len(origins) > limit:
        text += "; and %d more" % (len(origins) - limit)
    return text


def check_argvs(items, verdicts, release, flag_origin=None):
    """One message per refused argv: the flag, the release's words, where the argv came from.

    items: [{'argv': [...], 'origin': str}]; verdicts: [{'ok': bool, 'error': str}] in the same order;
    release: 'vllm 0.19.0'; flag_origin(flag) -> what in the collection sets that flag."""
    if len(items) != len(verdicts):
        raise ValueError("%d argvs but %d verdicts" % (len(items), len(verdicts)))
    grouped = {}
    for item, verdict in zip(items, verdicts):
        if verdict.get("ok"):
            continue
        error = verdict.get("error") or "refused"
        flag = flag_of(error) or "?"
        set_by = (" (set by %s)" % flag_origin(flag)) if flag_origin and flag != "?" else ""
        key = (flag, error)
        grouped.setdefault(key, {"set_by": set_by, "origins": [], "argv": item["argv"]})
        grouped[key]["origins"].append(item["origin"])
    messages = []
    for (flag, error), info in sorted(grouped.items()):
        messages.append("%s refuses %s%s: %s\n    from: %s\n    argv: %s" % (
            release, flag, info["set_by"], error, _origins(info["origins"]), " ".join(info["argv"])))
    return messages


def check_env(items, known, where_set=None, not_for_the_release=None):
    """One message per variable a release never reads.

    items: [{'name', 'value', 'origin'}]; known: {'vllm': (release label, set of names), ...}
    keyed like FAMILIES; where_set(name) -> files/rules that spell the name out;
    not_for_the_release: {name: reason} set on purpose for someone else (reported, not failed)."""
    grouped = {}
    for item in items:
        fam = family(item["name"])
        if fam is None or fam not in known or item["name"] in (not_for_the_release or {}):
            continue
        label, names = known[fam]
        if item["name"] in names:
            continue
        grouped.setdefault((item["name"], label), []).append(item["origin"])
    messages = []
    for (name, label), origins in sorted(grouped.items()):
        spelt = where_set(name) if where_set else []
        messages.append("%s: %s never reads it\n    from: %s%s" % (
            name, label, _origins(origins), ("\n    spelt out in: " + ", ".join(spelt)) if spelt else ""))
    return messages


def unchecked(items):
    """Names of variables outside the checked families (reported, not failed)."""
    return sorted({i["name"] for i in items if family(i["name"]) is None})


def parse_nccl_list(text):
    """(tag, commit, {names}) of a tests/contract/nccl_params-<tag>.txt."""
    header, names = {}, set()
    for line in text.splitlines():
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if sep:
                header.setdefault(key.strip(), value.strip())
            continue
        if line.strip():
            names.add(line.split("\t", 1)[0].strip())
    return header.get("tag"), header.get("commit"), names


def nccl_list_problem(list_tag, rulebook_tag, regen_command):
    """A message when the committed NCCL list is not of the rule book's tag, else None."""
    if list_tag == rulebook_tag:
        return None
    return ("the NCCL parameter list is of tag %s but the rule book's nccl_git_tag is %s: regenerate it with\n"
            "    %s\nand commit tests/contract/nccl_params-%s.txt" % (list_tag, rulebook_tag, regen_command, rulebook_tag))
