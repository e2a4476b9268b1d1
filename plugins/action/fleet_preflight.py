# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin: check the whole inventory before anything changes."""

from __future__ import annotations

import os

from ansible.plugins.action import ActionBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp

DOCUMENTATION = r"""
---
module: fleet_preflight
short_description: Check the whole inventory and every host before anything changes
description:
  - Runs on the controller, once, over every host of O(hosts).
  - Checks the type of every role variable the inventory sets against the roles'
    C(meta/argument_specs.yml), unknown or misspelt variables, fabric addressing,
    cluster layouts, model entries and the GB10 rule book against the host facts.
  - Reports all findings together; each names the host, the variable, the value and the fix.
  - Read-only; supports check mode.
options:
  hosts:
    description: Inventory hostnames to check.
    type: list
    elements: str
    required: true
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
"""

RETURN = r"""
findings:
  description: Every problem found, each with host, variable, value, problem and fix.
  type: list
  elements: dict
  returned: always
checked_hosts:
  description: The hosts that were checked.
  type: list
  elements: str
  returned: always
"""

ROLES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "roles")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("hosts",))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        hosts = self._task.args.get("hosts") or []
        all_hostvars = task_vars["hostvars"]
        role_specs = fp.load_role_specs(os.path.normpath(ROLES_DIR))
        fleet = {}
        for host in hosts:
            fleet[host] = dict(all_hostvars[host])
        findings = fp.check_fleet(fleet, role_specs)
        result["checked_hosts"] = list(hosts)
        result["findings"] = [f.as_dict() for f in findings]
        result["changed"] = False
        if findings:
            result["failed"] = True
            result["msg"] = "Preflight found %d problem(s); nothing was changed:\n%s" % (
                len(findings), "\n".join("- %s" % f for f in findings))
        else:
            result["msg"] = "Preflight: %d host(s) checked, no problems" % len(hosts)
        return result
