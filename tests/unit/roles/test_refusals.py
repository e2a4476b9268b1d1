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
    found = refusals()
    missing, stale = [], []
    for path, tasks in found.items():
        for name, task in tasks.items():
            if _settings_role(task) is None and name not in (listed.get(path) or {}):
                missing.append("%s: %s" % (path, name))
    for path, entries in listed.items():
        for name in entries:
            if name not in found.get(path, {}):
                stale.append("%s: %s" % (path, name))
    assert missing == [], "refusals neither made by preflight's function nor listed in %s" % REGISTRY
    assert stale == [], "entries of %s whose task is gone" % REGISTRY


def _check_entries(listed, kinds):
    """Each entry of a registry: a kind of ``kinds``; a ``preflight`` entry names functions preflight calls (one, or
    a list) and a proof whose cases exist; any other says why."""
    judge = inspect.getsource(fp.judge_fleet)
    with open(CASES) as handle:
        cases = set(yaml.safe_load(handle))
    for path, entries in listed.items():
        for name, entry in entries.items():
            where = "%s: %s" % (path, name)
            assert entry.get("kind") in kinds, where
            if entry["kind"] == "preflight":
                functions = entry.get("preflight")
                assert functions, where
                for function in functions if isinstance(functions, list) else [functions]:
                    assert callable(getattr(fp, function, None)), "%s: no %s" % (where, function)
                    assert "%s(" % function in judge, "%s: preflight does not call %s" % (where, function)
                assert entry.get("proof"), where
                for case in re.findall(r"tests/preflight/cases: (\w+)", entry["proof"]):
                    assert case in cases, "%s: no preflight case %s" % (where, case)
            else:
                assert entry.get("why"), where


def test_each_entry_says_how_preflight_makes_it_or_why_it_cannot():
    _check_entries(registry(), KINDS)


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


# ------------------------------------------------------------ the filters' and modules' refusals
PLUGIN_REGISTRY = os.path.join(REPO, "tests", "preflight", "plugin_refusals.yml")
PLUGIN_KINDS = KINDS | {"collection", "gap"}
# What a filter raises (directly or through the error of the module_utils it wraps) and what a module calls to fail.
REFUSAL_ERRORS = frozenset(("AnsibleFilterError", "EntryError", "ArgsError", "NcclEnvError", "UtilizationError",
                            "RayArgsError", "PlanError", "FirewallError"))
REFUSAL_HELPERS = frozenset(("_fail",))  # module_utils helpers that only raise one of those errors
PLUGIN_SOURCES = (("plugins/filter/*.py", "raise"), ("plugins/module_utils/*.py", "raise"), ("plugins/modules/*.py", "fail"))


def _refusal_sites(path, kind):
    """{function: number of refusals} of one file: raises of REFUSAL_ERRORS and calls of REFUSAL_HELPERS (``raise``),
    or calls of ``fail_json`` (``fail``), by the function (``Class.method``) that makes them."""
    import ast
    with open(path) as handle:
        tree = ast.parse(handle.read())
    found = {}

    def hit(node):
        if kind == "fail":
            return isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "fail_json"
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            return (getattr(exc, "id", None) or getattr(exc, "attr", None)) in REFUSAL_ERRORS
        return isinstance(node, ast.Call) and getattr(node.func, "id", None) in REFUSAL_HELPERS

    def visit(node, stack):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, stack + [child.name])
                continue
            if hit(child) and not (stack and stack[-1] in REFUSAL_HELPERS):
                key = ".".join(stack) or "<module>"
                found[key] = found.get(key, 0) + 1
            visit(child, stack)
    visit(tree, [])
    return found


def plugin_refusals():
    """{'plugins/.../file.py': {function: count}} of every filter, module and the module_utils they wrap."""
    found = {}
    for pattern, kind in PLUGIN_SOURCES:
        for path in sorted(glob.glob(os.path.join(REPO, pattern))):
            sites = _refusal_sites(path, kind)
            if sites:
                found[os.path.relpath(path, REPO)] = sites
    return found


def plugin_registry():
    with open(PLUGIN_REGISTRY) as handle:
        return yaml.safe_load(handle)


def test_every_plugin_refusal_is_preflights_or_says_why_not():
    """A refusal added to a filter, a module or the module_utils they wrap, without preflight making it first or an
    entry saying why it cannot be inventory input, fails here: so does one added to a function already listed (its
    count changes), and an entry whose function is gone."""
    listed, sites = plugin_registry(), plugin_refusals()
    missing, changed, stale = [], [], []
    for path, functions in sites.items():
        for function, count in functions.items():
            entry = (listed.get(path) or {}).get(function)
            if entry is None:
                missing.append("%s: %s" % (path, function))
            elif entry.get("refusals") != count:
                changed.append("%s: %s makes %d refusal(s), %s lists %s"
                               % (path, function, count, PLUGIN_REGISTRY, entry.get("refusals")))
    for path, functions in listed.items():
        stale += ["%s: %s" % (path, f) for f in functions if f not in sites.get(path, {})]
    assert missing == [], "refusals neither made by preflight first nor listed with why not in %s" % PLUGIN_REGISTRY
    assert changed == [], "refusals added or removed: decide whether preflight makes each first, then update the count"
    assert stale == [], "entries of %s whose function refuses nothing now" % PLUGIN_REGISTRY


def test_each_plugin_entry_says_how_preflight_makes_it_or_why_it_cannot():
    _check_entries(plugin_registry(), PLUGIN_KINDS)


def test_the_enumeration_sees_a_new_refusal(tmp_path):
    """The enumeration itself: a raise added to a filter and a fail_json to a module are counted."""
    source = tmp_path / "f.py"
    source.write_text("from ansible.errors import AnsibleFilterError\n\ndef f(x):\n    if x:\n"
                      "        raise AnsibleFilterError('no')\n    _fail('h', 'no')\n    return x\n\n"
                      "def _fail(h, m):\n    raise NcclEnvError(m)\n")
    assert _refusal_sites(str(source), "raise") == {"f": 2}
    source.write_text("def main(module):\n    module.fail_json(msg='a')\n    module.fail_json(msg='b')\n")
    assert _refusal_sites(str(source), "fail") == {"main": 2}
