# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter ray_gcs_port; its function is in plugins/filter/fleet_plan.py.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: ray_gcs_port
author: sparkfleet.gb10 developers
short_description: The GCS port of a Ray head, from its one home
version_added: 0.1.0
description:
- The C(gcs) port of the head's C(ray_head_ports) (the inventory's map on the head, else the C(sparkfleet.gb10.ray_head)
  role's default), planned from O(hostvars); the roles read it from the run's plan through C(sparkfleet.gb10.fleet_host).
options:
  _input:
    description: The inventory name of the Ray head.
    type: str
    required: true
  hostvars:
    description: C(hostvars), for the head's C(ray_head_ports).
    type: dict
"""

EXAMPLES = r"""
ray_worker_head_port: "{{ ray_worker_head_host | sparkfleet.gb10.ray_gcs_port(hostvars) }}"
"""

RETURN = r"""
_value:
  description: The port.
  type: int
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.fleet_plan import ray_gcs_port


class FilterModule(object):

    def filters(self):
        return {"ray_gcs_port": ray_gcs_port}
