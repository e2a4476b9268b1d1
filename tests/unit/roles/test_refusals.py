# -*- coding: utf-8 -*-
"""Every refusal of a role (each assert and fail task under roles/*/tasks) is made by preflight first, with the
same function, or says why it cannot be (tests/preflight/refusals.yml): so a broken inventory is refused before
the first change, and a new check in a role cannot slip past preflight unnoticed."""

import glob
import inspect
import json
import os
import re

import yaml

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils import role_settings

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
REGISTRY = os.path.join(REPO, "tests", "preflight", "refusals.yml")
CASES = os.path.join(REPO, "tests", "preflight", "cases.yml")
KINDS = {"preflight", "earlier_stage", "host", "outcome", "play"}
LOOKUP = re.compile(r"lookup\('sparkfleet\.gb10\.setting_problems', '(\w+)'")


def _walk(tasks):
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        for key in ("block", "rescue", "always"):
            yield from _walk(task.get(key))
        if "ansible.builtin.assert" in task or "ansible.builtin.fail" in task:
            yield task


def refusals():
    """{'role/tasks/file.yml': {task name: task}} of every role."""
    found = {}
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml"))):
        with open(path) as handle:
            tasks = list(_walk(yaml.safe_load(handle)))
        if tasks:
            found[os.path.relpath(path, os.path.join(REPO, "roles"))] = dict((t.get("name"), t) for t in tasks)
    return found


def _settings_role(task):
    """The role whose settings a task asserts through the shared function, or None."""
    match = LOOKUP.search(json.dumps(task))
    return match.group(1) if match else None


def registry():
    with open(REGISTRY) as handle:
        return yaml.safe_load(handle)


def test_every_refusal_is_preflights_or_says_why_not():
    listed = registry()
    missing, stale = [], []
    for path, tasks in refusals().items():
        for name, task in tasks.items():
            if _settings_role(task) is None and name not in (listed.get(path) or {}):
                missing.append("%s: %s" % (path, name))
    for path, entries in listed.items():
        for name in entries:
            if name not in refusals().get(path, {}):
                stale.append("%s: %s" % (path, name))
    assert missing == [], "refusals neither made by preflight's function nor listed in %s" % REGISTRY
    assert stale == [], "entries of %s whose task is gone" % REGISTRY


def test_each_entry_says_how_preflight_makes_it_or_why_it_cannot():
    judge = inspect.getsource(fp.judge_fleet)
    with open(CASES) as handle:
        cases = set(yaml.safe_load(handle))
    for path, entries in registry().items():
        for name, entry in entries.items():
            where = "%s: %s" % (path, name)
            assert entry.get("kind") in KINDS, where
            if entry["kind"] == "preflight":
                function = entry.get("preflight")
                assert callable(getattr(fp, function or "", None)), where
                assert "%s(" % function in judge, "%s: preflight does not call %s" % (where, function)
                assert entry.get("proof"), where
                for case in re.findall(r"tests/preflight/cases: (\w+)", entry["proof"]):
                    assert case in cases, "%s: no preflight case %s" % (where, case)
            else:
                assert entry.get("why"), where


def test_settings_checks_are_the_shared_function_of_their_own_role():
    """A role that asserts setting_problems asserts its own settings, and every role with settings checks does."""
    asserted = set()
    for path, tasks in refusals().items():
        for task in tasks.values():
            role = _settings_role(task)
            if role is not None:
                assert role == path.split(os.sep)[0], path
                assert "_problems | length == 0" in str(task["ansible.builtin.assert"]["that"]), path
                asserted.add(role)
    assert asserted == set(role_settings.roles())
    assert "check_role_settings(" in inspect.getsource(fp.judge_fleet)
