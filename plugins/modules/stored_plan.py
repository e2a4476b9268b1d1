# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Documentation of the stored_plan action (plugins/action/stored_plan.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stored_plan
short_description: Build or confirm the fleet plan every role reads
version_added: "0.1.0"
description:
  - An action that runs on the controller, for the host it runs for; no remote call. The first task of every role
    that reads the fleet plan (one task, no role of its own to validate), and all the role C(sparkfleet.gb10.plan)
    does.
  - Where the host holds the plan of this run (the fact C(sparkfleet_plan), stored by C(sparkfleet.gb10.fleet_preflight)
    under C(site.yml)) and it covers every host of O(hosts) and O(fleet_hosts), built from the layout variables the
    hosts have now (a digest of them is stored in the plan), it only confirms it.
  - Otherwise it builds the plan from the hosts' variables and facts with the plan's one function
    (C(plugins/module_utils/fleet_plan.py), C(build)), the same as preflight's, memory arithmetic included
    wherever the host's gb10 facts were gathered; so a model entry without its own C(gpu_memory_utilization)
    runs with the same computed share whether its role runs alone or under C(site.yml). Preflight's other checks
    are not made.
  - Fails with the reason when the inventory cannot be planned (C(playbooks/preflight.yml) names the variable and
    the fix).
options:
  hosts:
    description: Inventory hostnames to plan; empty for the play's hosts (C(ansible_play_hosts_all)).
    type: list
    elements: str
    default: []
  fleet_hosts:
    description:
      - The rest of the fleet, planned with O(hosts) although this run may not reach it (C(--limit)); a multi-node
        model keeps its nodes and a Ray cluster its head. Empty for the inventory's group C(sparks) (every host
        where the inventory has no such group).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
attributes:
  check_mode:
    description: Reads the inventory only; the same plan as a real run.
    support: full
  diff_mode:
    support: none
  idempotent:
    description: Stores a fact only; never reports a change.
    support: full
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Make sure the fleet plan is stored
  sparkfleet.gb10.stored_plan:
    hosts: "{{ ansible_play_hosts_all }}"
    fleet_hosts: "{{ groups['sparks'] | default(groups['all'], true) }}"

- name: The services of this host, from the plan
  ansible.builtin.debug:
    msg: "{{ (inventory_hostname | sparkfleet.gb10.fleet_host(ansible_facts.sparkfleet_plan)).services | map(attribute='unit') }}"
"""

RETURN = r"""
plan:
  description:
    - The fleet plan built here (keys as the filter C(sparkfleet.gb10.fleet_plan) documents, each host's part with its
      C(memory) arithmetic or null where its facts were not gathered); null where the stored one was confirmed.
  type: dict
  returned: always
ansible_facts:
  description: The plan built here as C(sparkfleet_plan), for the rest of the run.
  type: dict
  returned: when a plan was built
  contains:
    sparkfleet_plan:
      description: The same as RV(plan).
      type: dict
"""
