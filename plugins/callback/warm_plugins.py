# -*- coding: utf-8 -*-
# Apache-2.0
"""Loads the plugins every task needs once, in the controller, before the first task forks a worker."""

from __future__ import annotations

DOCUMENTATION = r"""
name: warm_plugins
type: aggregate
short_description: Loads the connection, filter, test and lookup plugins once in the controller, so no worker loads them again
version_added: "0.1.0"
description:
  - Ansible runs every task of every host in a new worker process, forked from the controller. A plugin the
    controller has not loaded yet is loaded again in each worker. For a connection plugin that means parsing its
    YAML documentation for its settings; for a collection's filters and tests, importing every file of its
    C(plugins/filter) and C(plugins/test). On a no-op rerun of C(site.yml) these loads were a fifth of the
    controller's CPU (C(bench/results.md), profile of the no-op rerun).
  - At the start of the playbook, in the controller, this callback loads the connection plugins named in
    O(connections), the default shell and become plugins, every filter, test and lookup plugin of the collections
    in O(collections), and the builtin ones. Workers forked afterwards inherit them.
  - It changes nothing a task does or prints. A plugin that fails to load here is left alone (the task that uses
    it reports the error as before).
  - Enabled in the collection's C(ansible.cfg) (C(callbacks_enabled)).
requirements:
  - enable in ansible.cfg (callbacks_enabled)
options:
  connections:
    description: Connection plugins to load (those the inventory uses; a missing one is skipped).
    type: list
    elements: str
    default: [ansible.builtin.ssh, ansible.builtin.local, community.docker.docker]
    env:
      - name: SPARKFLEET_WARM_CONNECTIONS
    ini:
      - section: sparkfleet_warm_plugins
        key: connections
  collections:
    description: Collections whose filter, test and lookup plugins are loaded.
    type: list
    elements: str
    default: [sparkfleet.gb10]
    env:
      - name: SPARKFLEET_WARM_COLLECTIONS
    ini:
      - section: sparkfleet_warm_plugins
        key: collections
"""

import importlib
import os

from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import (become_loader, connection_loader, filter_loader, lookup_loader, shell_loader,
                                    test_loader)

# A name no plugin has: asking a Jinja plugin loader for it in a collection imports every file of that
# collection's filter (or test) package on the way, and finds nothing.
NO_SUCH_PLUGIN = "sparkfleet_warm_plugins_no_such_plugin"


def _quietly(load, name):
    """Load one plugin; True when it loaded. Any failure is left to the task that uses the plugin."""
    try:
        return load(name) is not None
    except Exception:  # pylint: disable=broad-exception-caught
        return False


def _lookup_names(collection):
    """The lookup plugins of an installed collection (file names under its plugins/lookup)."""
    try:
        package = importlib.import_module("ansible_collections.%s.plugins.lookup" % collection)
    except Exception:  # pylint: disable=broad-exception-caught
        return []
    names = set()
    for directory in getattr(package, "__path__", []):
        for entry in os.listdir(directory):
            if entry.endswith(".py") and not entry.startswith("_"):
                names.add(collection + "." + entry[:-3])
    return sorted(names)


def warm(connections, collections):
    """Load the plugins; returns the names that loaded (for the tests)."""
    loaded = []
    for name in connections:
        # class_only: the class and its settings (parsed from its documentation), no connection is opened.
        if _quietly(lambda n: connection_loader.get(n, class_only=True), name):
            loaded.append(name)
    for loader, name in ((shell_loader, C.DEFAULT_EXECUTABLE and "sh"), (become_loader, C.DEFAULT_BECOME_METHOD)):
        if name and _quietly(lambda n, ldr=loader: ldr.get(n, class_only=True), name):
            loaded.append(name)
    for loader in (filter_loader, test_loader):
        # Builtin Jinja plugins are wrapped on the first request of any name.
        _quietly(loader.get, "ansible.builtin." + NO_SUCH_PLUGIN)
        for collection in collections:
            _quietly(loader.get, collection + "." + NO_SUCH_PLUGIN)
    for collection in collections:
        for name in _lookup_names(collection):
            if _quietly(lambda n: lookup_loader.get(n, class_only=True), name):
                loaded.append(name)
    return loaded


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sparkfleet.gb10.warm_plugins"
    CALLBACK_NEEDS_ENABLED = True
    _warmed = False  # until the first play of the run starts (then on the instance)

    def v2_playbook_on_play_start(self, play):
        if self._warmed:
            return
        self._warmed = True
        warm(self.get_option("connections"), self.get_option("collections"))
