# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter memory_sizable: whether one host's memory arithmetic can be done, by the fleet plan's own test."""
from __future__ import annotations

DOCUMENTATION = r"""
name: memory_sizable
author: sparkfleet.gb10 developers
short_description: Whether one host's memory arithmetic can be done, by the fleet plan's own test
version_added: 0.1.0
description:
  - True when the host's facts know its memory (C(memory.mem_total_bytes)), it holds entries, and each entry has
    its KV-cache keys (C(num_layers), C(num_kv_heads), C(head_dim), C(max_model_len)) and a weight size
    (C(weights_gib), C(params_b), or its weights measured on disk, O(weights_on_disk)).
  - The same test the fleet plan applies before it computes a host's split (C(plugins/module_utils/fleet_plan.py),
    C(sized)), so the model store sizes from the real weights exactly where the plan could size from the inventory.
options:
  _input:
    description: The host's C(gb10) facts.
    type: dict
    required: true
  entries:
    description: The model entries the host holds (without placement keys).
    type: list
    elements: dict
    required: true
  weights_on_disk:
    description: Bytes of weights on disk by entry name (the model store's manifests).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Size the host's services from the real weights
  ansible.builtin.set_fact:
    sized: "{{ ansible_facts.gb10 | sparkfleet.gb10.memory_sizable(served, weights) }}"
"""

RETURN = r"""
_value:
  description: Whether the arithmetic can be done.
  type: bool
"""

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan


def memory_sizable(gb10_facts, entries, weights_on_disk=None):
    return fleet_plan.memory_sizable(gb10_facts, entries, list(weights_on_disk or {}))


class FilterModule(object):

    def filters(self):
        return {"memory_sizable": memory_sizable}
