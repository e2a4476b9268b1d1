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
                 if p.parent.name not in ("module_utils", "action") and p.name != "__init__.py")


@pytest.mark.parametrize("path", PLUGINS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_doc_blocks_parse(path):
    data = read_docstring(str(path), verbose=False, ignore_errors=False)
    assert data["doc"], f"{path}: DOCUMENTATION is missing or empty"
    assert data["doc"].get("short_description"), f"{path}: no short_description"
    # read_docstring raises on a broken DOCUMENTATION or RETURN; EXAMPLES stays text.
    if data.get("plainexamples"):
        yaml.safe_load(data["plainexamples"])


FILTER_FILES = sorted((ROOT / "plugins" / "filter").glob("*.py"))


@pytest.mark.parametrize("path", FILTER_FILES, ids=lambda p: p.name)
def test_each_filter_file_registers_the_filter_it_documents(path):
    # ansible-doc reads a filter's documentation from the file that registers it: a second filter
    # registered in the same file would show the first one's documentation.
    import importlib
    module = importlib.import_module("ansible_collections.sparkfleet.gb10.plugins.filter." + path.stem)
    names = set(module.FilterModule().filters())
    documented = read_docstring(str(path), verbose=False, ignore_errors=False)["doc"]["name"]
    assert names == {documented} == {path.stem}


def test_no_documentation_beside_the_filters():
    # sidecar .yml files are read for plugins that are not Python only; for a filter they are ignored
    assert sorted(p.name for p in (ROOT / "plugins" / "filter").glob("*.yml")) == []
