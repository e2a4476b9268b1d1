# -*- coding: utf-8 -*-
"""The warm_plugins callback: what it loads in the controller is what a forked worker would load again."""

import json
import os
import subprocess
import sys

from ansible_local import COLLECTIONS, REPO, local_playbook  # tests/unit/ansible_local.py

# Run in a fresh interpreter: the loaders' caches are process-wide, and other tests fill them.
PROBE = r"""
import json, os, sys
from ansible import constants as C
from ansible.plugins.loader import connection_loader, filter_loader, init_plugin_loader, test_loader
init_plugin_loader([sys.argv[1]])
from ansible_collections.sparkfleet.gb10.plugins.callback import warm_plugins
# The name a worker's connection_loader.get() keys the plugin's settings by.
ssh = connection_loader.find_plugin_with_context("ansible.builtin.ssh").plugin_resolved_name
before = C.config.has_configuration_definition("connection", ssh)
loaded = warm_plugins.warm(json.loads(sys.argv[2]), ["sparkfleet.gb10"])
print(json.dumps({
    "before": before,
    "ssh_settings": C.config.has_configuration_definition("connection", ssh),
    "loaded": loaded,
    "filter_files": sorted(os.path.basename(p) for p in filter_loader._module_cache),
    "test_loader_ready": bool(test_loader._cached_non_collection_wrappers),
}))
"""


def _warm(connections):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS)
    proc = subprocess.run([sys.executable, "-c", PROBE, COLLECTIONS, json.dumps(connections)], cwd=REPO, env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_it_loads_the_connection_settings_every_collection_filter_and_the_lookups():
    state = _warm(["ansible.builtin.ssh", "ansible.builtin.local"])
    # A fresh controller has not read the ssh plugin's settings; after warm() a forked worker inherits them.
    assert state["before"] is False and state["ssh_settings"] is True
    assert {"ansible.builtin.ssh", "ansible.builtin.local", "sh"} <= set(state["loaded"])
    lookups = sorted(name[:-3] for name in os.listdir(os.path.join(REPO, "plugins", "lookup")) if name.endswith(".py"))
    assert ["sparkfleet.gb10." + name for name in lookups] == [n for n in state["loaded"] if n.startswith("sparkfleet")]
    # Every filter file of the collection is imported once here, not in each worker.
    filters = {name for name in os.listdir(os.path.join(REPO, "plugins", "filter")) if name.endswith(".py")}
    assert filters <= set(state["filter_files"])
    assert state["test_loader_ready"]


def test_a_connection_that_is_not_installed_is_skipped():
    state = _warm(["example.missing.nothing", "ansible.builtin.local"])
    assert "example.missing.nothing" not in state["loaded"]
    assert "ansible.builtin.local" in state["loaded"]


def test_a_run_with_it_enabled_runs_filters_and_lookups_as_before(tmp_path):
    # ansible.cfg enables the callback: a real run whose worker uses a collection filter and lookup.
    proc = local_playbook(tmp_path, """
- name: Warm plugins
  hosts: localhost
  gather_facts: false
  tasks:
    - name: A collection filter and lookup in a worker
      ansible.builtin.debug:
        msg: "{{ '10.0.0.0/24' | sparkfleet.gb10.fabric_address(3) }} {{ lookup('sparkfleet.gb10.rulebook', 'driver_branch') }}"
""")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "10.0.0.3 580" in proc.stdout, proc.stdout
