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


def _fragment_class(name):
    import importlib
    return importlib.import_module("ansible_collections.sparkfleet.gb10.plugins.doc_fragments." + name).ModuleDocFragment


# Each fragment's DOCUMENTATION and its named parts: the upper-case class attributes, extended as
# sparkfleet.gb10.<file>.<part in lower case> (attributes' PROBE as sparkfleet.gb10.attributes.probe).
FRAGMENT_PARTS = [(path.stem, part) for path in FRAGMENTS
                  for part in sorted(v for v in vars(_fragment_class(path.stem)) if v.isupper())]
SUPPORT = ("full", "partial", "none", "N/A")


@pytest.mark.parametrize("name, part", FRAGMENT_PARTS, ids=lambda v: v)
def test_doc_fragments_parse(name, part):
    """A doc fragment (plugins/doc_fragments) holds what several plugins document alike: options, attributes or
    notes, merged by extends_documentation_fragment (ansible-core wants its ``options``, empty or not). The
    attributes' DOCUMENTATION describes; a part of it (a kind of module) says the support of every attribute,
    described there or by DOCUMENTATION. ansible-core merges an attribute's keys, the module's winning."""
    fragment = _fragment_class(name)
    doc = yaml.safe_load(getattr(fragment, part))
    assert "options" in doc, f"{name}.{part}: no options"
    assert doc["options"] or doc.get("attributes") or doc.get("notes"), f"{name}.{part}: nothing to add"
    described = yaml.safe_load(fragment.DOCUMENTATION).get("attributes") or {}
    for attribute, keys in (doc.get("attributes") or {}).items():
        if part == "DOCUMENTATION":
            assert keys.get("description") and "support" not in keys, f"{name}: {attribute}"
        else:
            assert keys.get("support") in SUPPORT, f"{name}.{part}: {attribute}"
            assert keys.get("description") or attribute in described, f"{name}.{part}: {attribute} undescribed"


MODULES = [p for p in PLUGINS if p.parent.name == "modules"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_the_fragments_a_module_extends_exist(path):
    """Every fragment a module names is there (a part by its class attribute); a whole part (one that describes
    every attribute itself, as attributes.read_only) stands alone, since the fragment named first wins a key."""
    names = read_docstring(str(path), verbose=False, ignore_errors=False)["doc"].get("extends_documentation_fragment")
    names = [names] if isinstance(names, str) else names or []
    for full in names:
        assert full.startswith("sparkfleet.gb10."), full
        name, _dot, part = full[len("sparkfleet.gb10."):].partition(".")
        assert hasattr(_fragment_class(name), (part or "documentation").upper()), full
        keys = yaml.safe_load(getattr(_fragment_class(name), (part or "documentation").upper())).get("attributes") or {}
        if part and keys and all(k.get("description") for k in keys.values()):
            assert names == [full], "%s: %s describes every attribute itself; extend it alone" % (path.name, full)


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
