# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

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

import math

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import (
    KV_BYTES, MODEL_ENTRY_SPEC, EntryError, normalize, weights_gib)

GIB = float(2 ** 30)


def floor2(value):
    return math.floor(round(value * 100, 6)) / 100.0


def service_need(entry, what, disk_bytes=None):
    """Per-node need of one service; ``disk_bytes`` is the real size of its weight files when known."""
    nodes = entry["tensor_parallel_size"] * entry["pipeline_parallel_size"]
    if disk_bytes:
        weights, source = disk_bytes / GIB, "disk"
    else:
        weights, source = weights_gib(entry), "weights_gib" if entry.get("weights_gib") is not None else "params_b"
    if weights is None:
        raise AnsibleFilterError("%s: give 'weights_gib' or 'params_b' so the weights can be sized" % what)
    missing = [k for k in ("num_layers", "num_kv_heads", "head_dim", "max_model_len") if entry.get(k) is None]
    if missing:
        raise AnsibleFilterError("%s: key '%s' is needed to size the KV cache (also: %s)"
                                 % (what, missing[0], ", ".join(missing[1:]) or "nothing else"))
    per_token = 2 * entry["num_layers"] * entry["num_kv_heads"] * entry["head_dim"] * KV_BYTES[entry["kv_cache_dtype"]]
    kv = per_token * entry["max_model_len"] * (entry["max_num_seqs"] or 1) / GIB / nodes
    return {
        "nodes": nodes,
        "weights_gib": round(weights / nodes, 2),
        "weights_from": source,
        "kv_gib": round(kv, 2),
        "overhead_gib": float(entry["overhead_gib"]),
        "need_gib": round(weights / nodes + kv + entry["overhead_gib"], 2),
        "long_context_multi_node": nodes > 1 and entry["max_model_len"] >= rulebook.setting("long_context_threshold_tokens"),
    }


def gpu_memory_utilization(gb10_facts, services, os_headroom_gib=8.0, target=None, host=None, weights_on_disk=None):
    host = host or "this host"
    if not isinstance(gb10_facts, dict):
        raise AnsibleFilterError("host %s: input must be ansible_facts.gb10 (a dict)" % host)
    total_b = (gb10_facts.get("memory") or {}).get("mem_total_bytes")
    if not total_b:
        raise AnsibleFilterError("host %s: gb10.memory.mem_total_bytes is unknown (rule unified_memory: GPU memory is "
                                 "MemTotal); gather facts with sparkfleet.gb10.gb10_facts" % host)
    if not isinstance(services, list) or not services:
        raise AnsibleFilterError("host %s: services must be a non-empty list of model entries" % host)
    if weights_on_disk is not None and not (isinstance(weights_on_disk, dict) and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in weights_on_disk.values() if v is not None)):
        raise AnsibleFilterError("host %s: weights_on_disk must map service names to byte counts, got %r"
                                 % (host, weights_on_disk))
    ceiling = rulebook.setting("gpu_memory_utilization_ceiling")
    if target is None:
        target = rulebook.setting("gpu_memory_utilization_safe_max")
    if not isinstance(target, (int, float)) or isinstance(target, bool) or not 0 < target <= ceiling:
        raise AnsibleFilterError("host %s: target %r must be in (0, %s] (rule gpu_memory_utilization)" % (host, target, ceiling))
    if not isinstance(os_headroom_gib, (int, float)) or isinstance(os_headroom_gib, bool) or os_headroom_gib < 0:
        raise AnsibleFilterError("host %s: os_headroom_gib must be a number >= 0, got %r" % (host, os_headroom_gib))

    # vLLM takes its fraction of what CUDA reports. Where the GPU gate recorded that (memory.cuda_total_bytes;
    # ~62 GB with nvidia modeset=0 against ~120 GB of MemTotal, rule unified_memory), size from it.
    cuda_b = (gb10_facts.get("memory") or {}).get("cuda_total_bytes")
    sized_by = "MemTotal"
    if isinstance(cuda_b, int) and not isinstance(cuda_b, bool) and cuda_b > 0:
        total_b, sized_by = cuda_b, "CUDA total"
    total = total_b / GIB
    plan = {}
    order = []
    for raw in services:
        name = raw.get("name", "?") if isinstance(raw, dict) else "?"
        what = "host %s, model %s" % (host, name)
        try:
            entry = normalize(raw, MODEL_ENTRY_SPEC, what)
        except EntryError as exc:
            raise AnsibleFilterError(str(exc))
        if entry["name"] in plan:
            raise AnsibleFilterError("%s: two services are named %s; names must be unique" % (what, entry["name"]))
        item = service_need(entry, what, (weights_on_disk or {}).get(entry["name"]))
        item["need_fraction"] = round(item["need_gib"] / total, 4)
        item["explicit"] = entry["gpu_memory_utilization"] is not None
        item["utilization"] = entry["gpu_memory_utilization"]
        plan[entry["name"]] = item
        order.append(entry["name"])

    if any(p["long_context_multi_node"] for p in plan.values()):
        target = min(target, rulebook.setting("gpu_memory_utilization_long_context"))
    budget = min(target, (total - os_headroom_gib) / total)
    need_total = sum(p["need_gib"] for p in plan.values())
    arithmetic = "%s %.2f GiB; needs %s = %.2f GiB = %.3f of %s; budget min(target %.2f, (%.2f - %.1f " \
                 "headroom) / %.2f = %.3f) = %.3f" % (
                     sized_by, total, " + ".join("%s %.2f (weights %.2f%s + KV %.2f + overhead %.2f)" % (
                         n, plan[n]["need_gib"], plan[n]["weights_gib"],
                         " on disk" if plan[n]["weights_from"] == "disk" else "", plan[n]["kv_gib"], plan[n]["overhead_gib"])
                         for n in order), need_total, need_total / total, sized_by, target, total, os_headroom_gib, total,
                     (total - os_headroom_gib) / total, budget)
    if need_total / total > budget:
        raise AnsibleFilterError("host %s: the services do not fit. %s. Lower max_model_len or max_num_seqs, split the "
                                 "model over more nodes, or move a service to another host" % (host, arithmetic))

    fixed = sum(p["utilization"] for p in plan.values() if p["explicit"])
    flexible = [n for n in order if not plan[n]["explicit"]]
    flex_need = sum(plan[n]["need_gib"] for n in flexible) / total
    spare = budget - fixed - flex_need
    if flexible and spare < 0:
        raise AnsibleFilterError("host %s: explicit gpu_memory_utilization values (%.2f) leave too little for the "
                                 "others (need %.3f of %.3f). %s" % (host, fixed, flex_need, budget, arithmetic))
    # Values the inventory gave for every service are the user's choice up to the ceiling (each one is
    # also held to its cap and its need below); only the shares the filter hands out keep to the budget.
    if not flexible and round(fixed, 4) > ceiling:
        raise AnsibleFilterError("host %s: the explicit gpu_memory_utilization values add up to %.2f, above the "
                                 "ceiling %.2f (rule gpu_memory_utilization). %s" % (host, fixed, ceiling, arithmetic))
    for name in flexible:
        share = plan[name]["need_gib"] / (flex_need * total) if flex_need else 0
        plan[name]["utilization"] = floor2(plan[name]["need_gib"] / total + spare * share)
    for name in order:
        item = plan[name]
        cap = rulebook.setting("gpu_memory_utilization_long_context") if item["long_context_multi_node"] else ceiling
        if item["utilization"] > cap:
            raise AnsibleFilterError("host %s, model %s: key 'gpu_memory_utilization' %.2f is above %.2f (rule %s)" % (
                host, name, item["utilization"], cap,
                "long_context_multinode_utilization" if item["long_context_multi_node"] else "gpu_memory_utilization"))
        if item["utilization"] * total < item["need_gib"]:
            raise AnsibleFilterError("host %s, model %s: gpu_memory_utilization %.2f gives %.2f GiB but it needs %.2f "
                                     "GiB. %s" % (host, name, item["utilization"], item["utilization"] * total,
                                                  item["need_gib"], arithmetic))
    used = round(sum(p["utilization"] for p in plan.values()), 2)
    return {
        "host": host,
        "mem_total_gib": round(total, 2),
        "sized_by": sized_by,
        "os_headroom_gib": float(os_headroom_gib),
        "ceiling": ceiling,
        "target": target,
        "budget": round(budget, 4),
        "total_utilization": used,
        "free_gib": round(total * (1 - used), 2),
        "arithmetic": arithmetic,
        "services": plan,
    }


class FilterModule(object):

    def filters(self):
        return {"gpu_memory_utilization": gpu_memory_utilization}
