# -*- coding: utf-8 -*-
"""What the host-state tests expect, read from the collection, not restated.

Each test host (``--hosts=docker://site-spark-1,...``; the name after ``docker://``
is its inventory name) gets its variables the way Ansible would resolve them for
it: every role's ``defaults/main.yml``, then the inventory's ``group_vars`` (all,
then the host's other groups), rendered with Jinja2 where the rule book lookup
(``sparkfleet.gb10.rulebook``) and the collection's filters resolve from this
checkout. The inventory's group_vars and the host's groups come from options:

  --sparkfleet-group-vars DIR   default inventories/sim/group_vars
  --sparkfleet-groups JSON      {"group": [hosts]}; default: inventories/sim/hosts.yml
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import sys

import jinja2
import jinja2.meta
import jinja2.nativetypes
import pytest
import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTIONS = os.path.join(TOP, "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan, rulebook  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default  # noqa: E402


def pytest_addoption(parser):
    group = parser.getgroup("sparkfleet")
    group.addoption("--sparkfleet-group-vars", default=os.path.join(TOP, "inventories", "sim", "group_vars"),
                    help="the inventory's group_vars directory")
    group.addoption("--sparkfleet-groups", default="",
                    help="JSON {group: [hosts]} of the inventory (default: inventories/sim/hosts.yml)")


def _load_yaml_dir(directory):
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.yml")) + glob.glob(os.path.join(directory, "*.yaml"))):
        with open(path) as handle:
            out.update(yaml.safe_load(handle) or {})
    return out


def _groups_of_hosts_yml(path):
    groups = {"all": []}

    def walk(name, node):
        hosts = list((node or {}).get("hosts") or {})
        for child, sub in ((node or {}).get("children") or {}).items():
            hosts += walk(child, sub)
        groups[name] = sorted(set(groups.get(name, []) + hosts), key=hosts.index)
        return hosts

    with open(path) as handle:
        for name, node in (yaml.safe_load(handle) or {}).items():
            walk(name, node)
    return groups


def _collection_filters():
    filters = {}
    for path in sorted(glob.glob(os.path.join(TOP, "plugins", "filter", "*.py"))):
        module = importlib.import_module("ansible_collections.sparkfleet.gb10.plugins.filter." + os.path.basename(path)[:-3])
        for name, func in module.FilterModule().filters().items():
            filters["sparkfleet.gb10." + name] = func
    return filters


# The collection's lookups the role defaults use, from this checkout.
LOOKUPS = {"sparkfleet.gb10.rulebook": rulebook.setting, "sparkfleet.gb10.fleet_default": fleet_default}


def _lookup(plugin, *terms, **_kwargs):
    if plugin not in LOOKUPS:
        raise NotImplementedError("lookup %r: only %s resolve in the host-state tests" % (plugin, ", ".join(LOOKUPS)))
    values = [LOOKUPS[plugin](term) for term in terms]
    return values[0] if len(values) == 1 else values


class HostVars:
    """Variables of one inventory host, rendered on access (Jinja2 native types)."""

    def __init__(self, hostname, raw, groups):
        self.hostname = hostname
        self.raw = raw
        self.groups = groups
        self.env = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)
        self.env.filters.update(_collection_filters())
        self.env.globals["lookup"] = _lookup
        self._cache = {}

    def __getitem__(self, key):
        if key == "inventory_hostname":
            return self.hostname
        if key == "groups":
            return self.groups
        if key == "group_names":
            return [g for g in sorted(self.groups) if g != "all" and self.hostname in self.groups[g]]
        if key not in self._cache:
            if key not in self.raw:
                raise KeyError("%s: variable %s is neither in a role's defaults nor in the inventory" % (self.hostname, key))
            self._cache[key] = self.render(self.raw[key])
        return self._cache[key]

    def __contains__(self, key):
        return key in self.raw or key in ("inventory_hostname", "groups", "group_names")

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def render(self, value):
        if isinstance(value, list):
            return [self.render(item) for item in value]
        if isinstance(value, dict):
            return {key: self.render(item) for key, item in value.items()}
        if not isinstance(value, str) or ("{{" not in value and "{%" not in value):
            return value
        names = jinja2.meta.find_undeclared_variables(self.env.parse(value))
        context = {name: self[name] for name in names if name in self.raw or name in ("groups", "inventory_hostname")}
        return self.render(self.env.from_string(value).render(context))

    def in_group(self, group):
        return self.hostname in self.groups.get(group, [])


@pytest.fixture(scope="session")
def inventory_groups(request):
    given = request.config.getoption("--sparkfleet-groups")
    if given:
        return json.loads(given)
    return _groups_of_hosts_yml(os.path.join(TOP, "inventories", "sim", "hosts.yml"))


def collection_vars(name, groups, group_vars):
    """HostVars of inventory host NAME: role defaults, then group_vars of all and of its other groups."""
    raw = {}
    for path in sorted(glob.glob(os.path.join(TOP, "roles", "*", "defaults", "main.yml"))):
        with open(path) as handle:
            raw.update(yaml.safe_load(handle) or {})
    member_of = [g for g in sorted(groups) if g != "all" and name in groups[g]]
    if not member_of:
        raise LookupError("%s is in no group of the inventory %s" % (name, groups))
    for group in ["all"] + member_of:
        raw.update(_load_yaml_dir(os.path.join(group_vars, group)))
    return HostVars(name, raw, groups)


@pytest.fixture(scope="module")
def hostvars(host, request, inventory_groups):
    """The collection's variables for the host under test."""
    try:
        return collection_vars(host.backend.get_hostname(), inventory_groups,
                               request.config.getoption("--sparkfleet-group-vars"))
    except LookupError as error:
        pytest.fail(str(error))


@pytest.fixture(scope="session")
def plan(request, inventory_groups):
    """The fleet plan (plugins/module_utils/fleet_plan.py) of the inventory's hosts, as preflight builds it."""
    group_vars = request.config.getoption("--sparkfleet-group-vars")
    hosts = inventory_groups.get("sparks") or inventory_groups["all"]
    return fleet_plan.build(dict((h, fleet_plan.plan_inputs(collection_vars(h, inventory_groups, group_vars)))
                                 for h in hosts))


@pytest.fixture(scope="module")
def served_models(hostvars, plan):
    """The vLLM services this host runs a unit for (the plan's: its own models, and multi-node ones it is a
    member of, except followers of the ray executor, which run inside the Ray worker)."""
    return plan["hosts"][hostvars.hostname]["services"]


@pytest.fixture(scope="module")
def api_models(served_models):
    """The services whose API this host serves (own ones, and multi-node ones it heads)."""
    return [s for s in served_models if s["serves_api"]]
