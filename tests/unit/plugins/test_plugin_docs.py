"""Every plugin's DOCUMENTATION, EXAMPLES and RETURN must be YAML that Ansible can read
(action plugins have none of their own: they share their module's).

ansible-doc and ansible-lint only print an error for a broken block and go on, so a
quoting mistake in a description would otherwise ship unnoticed.
"""
from pathlib import Path

import pytest
import yaml
from ansible.parsing.plugin_docs import read_docstring

ROOT = Path(__file__).resolve().parents[3]
PLUGINS = sorted(p for p in (ROOT / "plugins").glob("*/*.py")
                 if p.parent.name not in ("module_utils", "action", "doc_fragments") and p.name != "__init__.py")
FRAGMENTS = sorted((ROOT / "plugins" / "doc_fragments").glob("*.py"))


@pytest.mark.parametrize("path", PLUGINS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_doc_blocks_parse(path):
    data = read_docstring(str(path), verbose=False, ignore_errors=False)
    if path.parent.name == "filter" and not data["doc"]:
        return  # a file of several filters: each is documented in its .yml (test_each_filter_has_one_documentation)
    assert data["doc"], f"{path}: DOCUMENTATION is missing or empty"
    assert data["doc"].get("short_description"), f"{path}: no short_description"
    # read_docstring raises on a broken DOCUMENTATION or RETURN; EXAMPLES stays text.
    if data.get("plainexamples"):
        yaml.safe_load(data["plainexamples"])


@pytest.mark.parametrize("path", FRAGMENTS, ids=lambda p: f"doc_fragments/{p.name}")
def test_doc_fragments_parse(path):
    """A doc fragment (plugins/doc_fragments) holds options or attributes shared by modules: its DOCUMENTATION is a
    class attribute, merged by extends_documentation_fragment. An attribute fragment describes; each module says its
    own support (ansible-core merges the two, the module's keys winning)."""
    import importlib
    module = importlib.import_module("ansible_collections.sparkfleet.gb10.plugins.doc_fragments." + path.stem)
    doc = yaml.safe_load(module.ModuleDocFragment.DOCUMENTATION)
    assert doc.get("options") or doc.get("attributes"), f"{path}: neither options nor attributes"
    for name, attribute in (doc.get("attributes") or {}).items():
        assert attribute.get("description") and "support" not in attribute, f"{path}: {name}"


FILTER_FILES = sorted((ROOT / "plugins" / "filter").glob("*.py"))
SIDECARS = sorted((ROOT / "plugins" / "filter").glob("*.yml"))


def _registered(path):
    import importlib
    module = importlib.import_module("ansible_collections.sparkfleet.gb10.plugins.filter." + path.stem)
    return set(module.FilterModule().filters())


def _own_doc(path):
    return read_docstring(str(path), verbose=False, ignore_errors=False)["doc"]


@pytest.mark.parametrize("path", FILTER_FILES, ids=lambda p: p.name)
def test_each_filter_has_one_documentation(path):
    """ansible-doc reads a filter's documentation from the file that registers it; a file that registers several
    filters carries no DOCUMENTATION of its own (ansible-doc would show it for all of them) and each of its filters
    has a <name>.yml beside it, which ansible-doc reads instead."""
    names = _registered(path)
    own = _own_doc(path)
    if own:
        assert names == {own["name"]} == {path.stem}
        assert not (path.parent / (path.stem + ".yml")).exists(), "%s is documented twice" % path.stem
        return
    for name in sorted(names):
        sidecar = path.parent / (name + ".yml")
        assert sidecar.exists(), "%s registers %s, documented nowhere (add %s)" % (path.name, name, sidecar.name)
        data = yaml.safe_load(sidecar.read_text())
        assert data["DOCUMENTATION"]["name"] == name
        assert data["DOCUMENTATION"].get("short_description"), "%s: no short_description" % sidecar.name
        assert data.get("EXAMPLES") and data.get("RETURN"), "%s: EXAMPLES and RETURN" % sidecar.name
        yaml.safe_load(data["EXAMPLES"])


def test_no_documentation_of_a_filter_nobody_registers():
    undocumented_files = [p for p in FILTER_FILES if not _own_doc(p)]
    registered = set().union(*[_registered(p) for p in undocumented_files]) if undocumented_files else set()
    assert sorted(p.stem for p in SIDECARS if p.stem not in registered) == []


def test_ansible_doc_shows_every_filter():
    """What users run: ansible-doc finds the documentation of every filter the collection registers."""
    import json
    import os
    import subprocess
    names = sorted(set().union(*[_registered(p) for p in FILTER_FILES]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-doc"), "-t", "filter", "--json"]
                          + ["sparkfleet.gb10." + n for n in names], capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    docs = json.loads(proc.stdout)
    for name in names:
        doc = (docs.get("sparkfleet.gb10." + name) or {}).get("doc") or {}
        assert doc.get("name") == name and doc.get("short_description"), "ansible-doc: %s has no documentation" % name
