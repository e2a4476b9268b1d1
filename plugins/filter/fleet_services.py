# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter fleet_services; its function is in plugins/filter/fleet_plan.py.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_services
author: sparkfleet.gb10 developers
short_description: The vLLM services of one host, from the fleet plan
version_added: 0.1.0
description:
- One service per model entry the host takes part in and runs a unit for (a follower of the C(ray) executor runs
  inside the Ray worker and has none), computed by C(plugins/module_utils/fleet_plan.py) as preflight checks it.
- A multi-node model's master address is its first node's C(vllm_service_node_ip), else its C(sparkfleet_fabric_address)
  (from C(hostvars)), else C(address).
- Planned here from the entries given; the roles read the services of the run's plan through
  C(sparkfleet.gb10.fleet_host) (its C(services)).
options:
  _input:
    description: The host's model entries (C(sparkfleet_models) or C(vllm_service_models)).
    type: list
    elements: dict
    required: true
  host:
    description: The inventory name of the host.
    type: str
    required: true
  hostvars:
    description: C(hostvars), for the first node's fabric address.
    type: dict
  executor:
    description: The host's default executor (an entry's C(executor) wins).
    type: str
  unit_prefix:
    description:
      - Prefix of the unit names (a role's own, such as C(vllm_service_unit_prefix)).
      - Unset or empty, the plan's unit names, from the host's C(vllm_service_unit_prefix) where the inventory sets it,
        else the C(sparkfleet.gb10.vllm_service) role's default (the prefix's one home).
    type: str
  vllm_bin:
    description: The vllm executable, put into each service's C(cluster).
    type: str
  address:
    description: Fallback master address (this host's fabric address).
    type: str
"""

EXAMPLES = r"""
_services: "{{ vllm_service_models | sparkfleet.gb10.fleet_services(inventory_hostname, hostvars, executor='mp') }}"
"""

RETURN = r"""
_value:
  description: C(name), C(unit), C(port), C(served_name) (the name clients ask for), C(rank), C(role) (head or follower), C(serves_api), C(nodes), C(head),
    C(executor), C(nnodes), C(master_addr), C(master_port), C(cluster), C(entry), C(model) of each service.
  type: list
  elements: dict
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.fleet_plan import fleet_services


class FilterModule(object):

    def filters(self):
        return {"fleet_services": fleet_services}
