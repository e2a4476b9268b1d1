# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter ray_cluster; its function is in plugins/filter/fleet_plan.py.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: ray_cluster
author: sparkfleet.gb10 developers
short_description: The Ray cluster of a host, from the fleet plan
version_added: 0.1.0
description:
- The Ray cluster the host belongs to in the fleet plan (C(sparkfleet.gb10.fleet_plan)), that is the hosts of groups
  C(ray_head) and C(ray_workers) that share its C(sparkfleet_cluster). An inventory may hold several.
- Worked out from O(hostvars) with the plan's own function; the roles read the Ray cluster of the run's plan through
  C(sparkfleet.gb10.fleet_host) (its C(ray)).
options:
  _input:
    description: The inventory name of the host.
    type: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts of the Ray groups (C(ray_head) and C(ray_workers)); the host itself is added.
    type: list
    elements: str
"""

EXAMPLES = r"""
_members: "{{ (inventory_hostname | sparkfleet.gb10.ray_cluster(hostvars, groups['ray_head'] | union(groups['ray_workers']))).members }}"
"""

RETURN = r"""
_value:
  description:
    - C(members), C(head), C(workers), C(gcs_port), C(dashboard_port) and C(address) (the head's fabric address and
      GCS port); an empty dict for a host in no Ray group.
  type: dict
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.fleet_plan import ray_cluster


class FilterModule(object):

    def filters(self):
        return {"ray_cluster": ray_cluster}
