# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter gpu_memory_utilization; the arithmetic is plugins/module_utils/gpu_memory_utilization.py, which the
preflight action calls too."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_memory_utilization
author: sparkfleet.gb10 developers
short_description: C(--gpu-memory-utilization) for every vLLM service on one GB10 host, with the arithmetic
version_added: "0.1.0"
description:
  - GB10 memory is unified, so the size vLLM works from is MemTotal (C(gb10.memory.mem_total_bytes)), or what CUDA
    itself reported to the GPU gate (C(gb10.memory.cuda_total_bytes)) where the gate recorded it.
  - For each service on the host (model entries, see C(plugins/module_utils/model_entry.py)) the need per node is
    weights / (tensor x pipeline parallel) + KV cache + overhead. Weights are the real size of the weight files
    when it is known (O(weights_on_disk), from the manifest C(sparkfleet.gb10.model_store) proved), else
    C(weights_gib), else C(params_b) x bytes per parameter of the checkpoint format; the KV cache from
    2 x C(num_layers) x C(num_kv_heads) x C(head_dim) x KV bytes x C(max_model_len) x C(max_num_seqs), split
    across the nodes.
  - The host budget is the lower of the target (0.87, top of the rule book's safe range; 0.82 when a service runs
    131K context across nodes) and (MemTotal - OS headroom) / MemTotal; it is never above the ceiling 0.90.
  - The spare budget is shared in proportion to need; each utilization is rounded down to 2 decimals.
    A service with an explicit C(gpu_memory_utilization) keeps it (it must cover its need); when every service
    has one, their sum may reach the ceiling 0.90.
  - Preflight stores these shares in the fleet plan, and the vLLM units run with them.
  - Fails, showing the arithmetic, when the services do not fit.
options:
  _input:
    description: C(ansible_facts.gb10) of the host.
    type: dict
    required: true
  services:
    description: Model entries co-located on this host.
    type: list
    elements: dict
    required: true
  os_headroom_gib:
    description: Memory kept for the OS, page cache and other processes (GiB).
    type: float
    default: 8.0
  target:
    description: Total utilization to aim for; at most the ceiling 0.90.
    type: float
  host:
    description: Inventory name used in messages.
    type: str
  weights_on_disk:
    description:
      - "C({service name: bytes}): the real size of each model's weight files (the filter
        C(sparkfleet.gb10.model_store_weights) reads it from the store's manifests). It wins over C(weights_gib)
        and C(params_b), which are the inventory's word for it."
    type: dict
"""

EXAMPLES = r"""
- name: Size the services on this node
  ansible.builtin.set_fact:
    node_memory_plan: "{{ ansible_facts.gb10 | sparkfleet.gb10.gpu_memory_utilization(node_models, host=inventory_hostname) }}"

- name: Use it
  ansible.builtin.debug:
    msg: "{{ node_memory_plan.services['qwen3-235b'].utilization }}"
"""

RETURN = r"""
_value:
  description: The plan and its arithmetic.
  type: dict
  contains:
    mem_total_gib:
      description: MemTotal in GiB.
      type: float
    os_headroom_gib:
      description: Headroom used.
      type: float
    ceiling:
      description: Rule book ceiling (0.90).
      type: float
    target:
      description: Target used (0.87, or 0.82 for long-context multi-node).
      type: float
    budget:
      description: min(target, (MemTotal - headroom) / MemTotal).
      type: float
    total_utilization:
      description: Sum of the services' utilizations.
      type: float
    services:
      description: >-
        By service name - weights_gib, weights_from (disk, weights_gib or params_b), kv_gib, overhead_gib,
        need_gib (per node), need_fraction, utilization, nodes, long_context_multi_node, explicit.
      type: dict
"""


from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import gpu_memory_utilization as impl


def gpu_memory_utilization(gb10_facts, services, os_headroom_gib=8.0, target=None, host=None, weights_on_disk=None):
    try:
        return impl.gpu_memory_utilization(gb10_facts, services, os_headroom_gib=os_headroom_gib, target=target,
                                           host=host, weights_on_disk=weights_on_disk)
    except impl.UtilizationError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):

    def filters(self):
        return {"gpu_memory_utilization": gpu_memory_utilization}
