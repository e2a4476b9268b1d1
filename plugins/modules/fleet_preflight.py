# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Documentation of the fleet_preflight action (plugins/action/fleet_preflight.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_preflight
short_description: Check the whole inventory and every host before anything changes
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.no_diff
description:
  - An action that runs on the controller, once, over every host of O(hosts) and O(fleet_hosts).
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
  fleet_hosts:
    description:
      - The rest of the fleet (the inventory's group C(sparks)), checked and planned with O(hosts) although this run
        may not reach it (C(--limit)); a multi-node model keeps its nodes and a Ray cluster its head, and the inventory
        is judged the same with or without C(--limit). Checks of host facts apply to the hosts whose facts were
        gathered.
    type: list
    elements: str
    default: []
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Check the fleet
  sparkfleet.gb10.fleet_preflight:
    hosts: "{{ ansible_play_hosts_all }}"
    fleet_hosts: "{{ groups['sparks'] }}"
  run_once: true

# Later, in any role of the run:
- name: The services of this host, from the plan preflight stored
  ansible.builtin.debug:
    msg: "{{ ansible_facts.sparkfleet_plan.hosts[inventory_hostname].services | map(attribute='unit') }}"
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
plan:
  description:
    - The fleet plan of O(hosts) and O(fleet_hosts) (C(plugins/module_utils/fleet_plan.py), the filter
      C(sparkfleet.gb10.fleet_plan) documents its keys) when there is no finding, else null.
    - Each host's part also has C(memory), the gpu-memory-utilization arithmetic of the entries it holds (filter
      C(sparkfleet.gb10.gpu_memory_utilization) on its facts), or null where its facts were not gathered or an entry
      has no size (C(params_b) or C(weights_gib)).
  type: dict
  returned: always
ansible_facts:
  description: The fleet plan as C(sparkfleet_plan), when there is no finding; with C(run_once), every host of the play
    gets it, for the rest of the run.
  type: dict
  returned: success
  contains:
    sparkfleet_plan:
      description: The same as RV(plan).
      type: dict
checked_hosts:
  description: The hosts that were checked (O(hosts), then those of O(fleet_hosts) not among them).
  type: list
  elements: str
  returned: always
"""
