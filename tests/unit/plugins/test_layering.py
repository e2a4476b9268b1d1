# -*- coding: utf-8 -*-
"""The plugins' layers: logic lives in plugins/module_utils and every plugin (filter, action, lookup, callback,
module) imports the collection's code only from there; module_utils imports nothing of Ansible's but
ansible.module_utils (what a module shipped to a host may carry). A plugin importing another plugin is how logic
drifts back into the plugins."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
OWN = "ansible_collections.sparkfleet.gb10.plugins."
FILES = sorted(p for p in (ROOT / "plugins").glob("*/*.py") if p.name != "__init__.py")


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name


@pytest.mark.parametrize("path", FILES, ids=lambda p: "%s/%s" % (p.parent.name, p.name))
def test_plugins_import_the_collection_only_from_module_utils(path):
    wrong = [m for m in _imports(path) if m.startswith(OWN) and not m.startswith(OWN + "module_utils")]
    assert wrong == [], "%s imports %s: move what it needs into plugins/module_utils" % (path.name, wrong)


@pytest.mark.parametrize("path", sorted((ROOT / "plugins" / "module_utils").glob("*.py")), ids=lambda p: p.name)
def test_module_utils_import_no_controller_code(path):
    wrong = [m for m in _imports(path) if (m == "ansible" or m.startswith("ansible."))
             and not m.startswith("ansible.module_utils")]
    assert wrong == [], "%s imports %s" % (path.name, wrong)
