# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Documentation of the fleet_preflight action (plugins/action/fleet_preflight.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_preflight
short_description: Check the whole inventory and every host before anything changes
description:
  - An action that runs on the controller, once, over every host of O(hosts).
  - Checks the type of every role variable the inventory sets against the roles'
    C(meta/argument_specs.yml), unknown or misspelt variables, fabric addressing,
    cluster layouts, model entries and the GB10 rule book against the host facts.
  - Reports all findings together; each names the host, the variable, the value and the fix.
  - Warns, once per endpoint, about every model entry that opts out of its API key
    (C(api_key) set to C(none), with C(api_key_optout_reason)); an opt-out without a reason is a finding.
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
author:
  - sparkfleet.gb10 developers
"""

EXAMPLES = r"""
- name: Check the fleet
  sparkfleet.gb10.fleet_preflight:
    hosts: "{{ ansible_play_hosts_all }}"
  run_once: true
"""

RETURN = r"""
findings:
  description: Every problem found, each with host, variable, value, problem and fix.
  type: list
  elements: dict
  returned: always
api_key_optouts:
  description: One line per endpoint that answers without an API key, with the reason given (also shown as warnings).
  type: list
  elements: str
  returned: always
checked_hosts:
  description: The hosts that were checked.
  type: list
  elements: str
  returned: always
"""
