# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter nccl_env_vars; its function is in plugins/filter/nccl_env.py.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_env_vars
author: sparkfleet.gb10 developers
short_description: Only the environment dict of sparkfleet.gb10.nccl_env
version_added: 0.1.0
description:
- Same inputs and checks as C(sparkfleet.gb10.nccl_env); returns its C(env) dict, for templates.
options:
  _input:
    description: C(ansible_facts.gb10) of the host.
    type: dict
    required: true
  fabric:
    description: C(interface), C(address), C(overrides), C(allow_socket_fallback) as for C(nccl_env).
    type: dict
    required: true
  host:
    description: Inventory name used in messages.
    type: str
"""

EXAMPLES = r"""
- name: Write an EnvironmentFile with NCCL's variables
  sparkfleet.gb10.host_files:
    files:
      - path: /etc/sparkfleet/nccl.env
        mode: "0644"
        content: |
          {% for name, value in ansible_facts.gb10 | sparkfleet.gb10.nccl_env_vars(sparkfleet_fabric) | dictsort %}
          {{ name }}={{ value }}
          {% endfor %}
"""

RETURN = r"""
_value:
  description: Environment variable name to string value.
  type: dict
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_env import nccl_env_vars


class FilterModule(object):

    def filters(self):
        return {"nccl_env_vars": nccl_env_vars}
