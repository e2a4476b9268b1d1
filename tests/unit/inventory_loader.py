# -*- coding: utf-8 -*-
"""An inventory's hostvars as the controller templates them (Ansible's own inventory and variable
managers, the collection's filters resolvable), for tests of what the roles derive from inventory.

It runs in a fresh interpreter (``python inventory_loader.py SOURCE NAME...``): Ansible's collection
loader must be installed before anything imports ``ansible_collections``, which the unit tests import
as a plain package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load_fleet(source, names, extra_vars_files=()):
    """``{host: {variable: templated value}}`` of the ``names`` each host of ``source`` has; ``extra_vars_files``:
    YAML files of variables above the inventory's, as ``-e @FILE`` gives them."""
    extra = [arg for path in extra_vars_files for arg in ("--extra-vars-file", os.path.abspath(path))]
    proc = subprocess.run([sys.executable, os.path.abspath(__file__)] + extra + [source] + list(names),
                          capture_output=True, text=True, check=False, cwd=TOP)
    if proc.returncode:
        raise RuntimeError("cannot load %s: %s" % (source, proc.stderr))
    return json.loads(proc.stdout)


def _main(source, names, extra_files=()):
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
    _AnsibleCollectionFinder(paths=[os.path.join(TOP, "collections")])._install()
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible.vars.manager import VariableManager

    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[source])
    manager = VariableManager(loader=loader, inventory=inventory)
    extra = {}
    for path in extra_files:
        extra.update(loader.load_from_file(path) or {})
    fleet = {}
    for host in inventory.get_hosts():
        variables = manager.get_vars(host=host, include_hostvars=True)
        variables.update(extra)
        templar = Templar(loader=loader, variables=variables)
        fleet[host.name] = dict((name, templar.template(variables[name])) for name in names if name in variables)
    json.dump(fleet, sys.stdout, default=str)


if __name__ == "__main__":
    _args, _extra = sys.argv[1:], []
    while _args[:1] == ["--extra-vars-file"]:
        _extra.append(_args[1])
        _args = _args[2:]
    _main(_args[0], _args[1:], _extra)
