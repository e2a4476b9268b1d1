# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The memory arithmetic of a host: each service's weights, KV cache and overhead per node, and the
--gpu-memory-utilization of each within the rule book's budget (unified memory: the OS and the page cache
keep their headroom). Pure Python: the filter in plugins/filter/gpu_memory_utilization.py and the preflight
action call it."""

from __future__ import annotations

import math

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import (
    KV_BYTES, MODEL_ENTRY_SPEC, EntryError, normalize, weights_gib)


class UtilizationError(ValueError):
    """An input that cannot be used; the message names the host, the key and the fix (the filter raises it as
    AnsibleFilterError)."""


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
        raise UtilizationError("%s: give 'weights_gib' or 'params_b' so the weights can be sized" % what)
    missing = [k for k in ("num_layers", "num_kv_heads", "head_dim", "max_model_len") if entry.get(k) is None]
    if missing:
        raise UtilizationError("%s: key '%s' is needed to size the KV cache (also: %s)"
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
        "long_context_multi_node": utilization_limits(entry["max_model_len"], nodes)[2] != "gpu_memory_utilization",
    }


def utilization_limits(max_model_len, nodes):
    """The one home of the rule book's --gpu-memory-utilization limits for an entry: ``(default, cap, rule)``, the
    value an entry without its own takes, the most it may have, and the rule that says so. A model of at least
    ``long_context_threshold_tokens`` over several nodes is held to ``gpu_memory_utilization_long_context`` (rule
    long_context_multinode_utilization), as default and cap; any other to the safe maximum and the ceiling (rule
    gpu_memory_utilization). vllm_args' check of an entry and the split below both take it from here."""
    if nodes > 1 and (max_model_len or 0) >= rulebook.setting("long_context_threshold_tokens"):
        cap = rulebook.setting("gpu_memory_utilization_long_context")
        return cap, cap, "long_context_multinode_utilization"
    return (rulebook.setting("gpu_memory_utilization_safe_max"), rulebook.setting("gpu_memory_utilization_ceiling"),
            "gpu_memory_utilization")


def cuda_total(gb10_facts):
    """``(bytes, what)``: the memory vLLM takes its fraction of, CUDA's total where the GPU gate recorded it, else
    MemTotal (rule unified_memory); ``(None, None)`` without either."""
    memory = (gb10_facts or {}).get("memory") or {}
    cuda_b = memory.get("cuda_total_bytes")
    if isinstance(cuda_b, int) and not isinstance(cuda_b, bool) and cuda_b > 0:
        return cuda_b, "CUDA total"
    total_b = memory.get("mem_total_bytes")
    return (total_b, "MemTotal") if total_b else (None, None)


def weights_shortfall(gb10_facts, entry, utilization):
    """For an entry whose KV cache cannot be sized (no num_layers, ...) but whose weights can (weights_gib or
    params_b): the text saying why its share of the weights on one node, with its overhead, exceeds
    ``utilization`` of the host's memory, else None. The KV cache would need more still, so this is a floor: a
    model that fails it cannot load."""
    total_b, sized_by = cuda_total(gb10_facts)
    weights = weights_gib(entry)
    if not total_b or weights is None:
        return None
    nodes = (entry.get("tensor_parallel_size") or 1) * (entry.get("pipeline_parallel_size") or 1)
    overhead = entry.get("overhead_gib")
    overhead = float(MODEL_ENTRY_SPEC["overhead_gib"]["default"] if overhead is None else overhead)
    need = weights / nodes + overhead
    budget = utilization * total_b / GIB
    if need <= budget:
        return None
    return ("its weights, %.1f GiB%s, and %.1f GiB of overhead need %.1f GiB before any KV cache, but "
            "gpu_memory_utilization %.2f of %s %.1f GiB gives %.1f GiB" % (
                weights / nodes, " on each of %d nodes" % nodes if nodes > 1 else "", overhead, need, utilization,
                sized_by, total_b / GIB, budget))


def gpu_memory_utilization(gb10_facts, services, os_headroom_gib=8.0, target=None, host=None, weights_on_disk=None):
    host = host or "this host"
    if not isinstance(gb10_facts, dict):
        raise UtilizationError("host %s: input must be ansible_facts.gb10 (a dict)" % host)
    total_b = (gb10_facts.get("memory") or {}).get("mem_total_bytes")
    if not total_b:
        raise UtilizationError("host %s: gb10.memory.mem_total_bytes is unknown (rule unified_memory: GPU memory is "
                               "MemTotal); gather facts with sparkfleet.gb10.gb10_facts" % host)
    if not isinstance(services, list) or not services:
        raise UtilizationError("host %s: services must be a non-empty list of model entries" % host)
    if weights_on_disk is not None and not (isinstance(weights_on_disk, dict) and all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in weights_on_disk.values() if v is not None)):
        raise UtilizationError("host %s: weights_on_disk must map service names to byte counts, got %r"
                               % (host, weights_on_disk))
    default, ceiling, dummy = utilization_limits(0, 1)
    if target is None:
        target = default
    if not isinstance(target, (int, float)) or isinstance(target, bool) or not 0 < target <= ceiling:
        raise UtilizationError("host %s: target %r must be in (0, %s] (rule gpu_memory_utilization)" % (host, target, ceiling))
    if not isinstance(os_headroom_gib, (int, float)) or isinstance(os_headroom_gib, bool) or os_headroom_gib < 0:
        raise UtilizationError("host %s: os_headroom_gib must be a number >= 0, got %r" % (host, os_headroom_gib))

    # vLLM takes its fraction of what CUDA reports. Where the GPU gate recorded that (memory.cuda_total_bytes;
    # ~62 GB with nvidia modeset=0 against ~120 GB of MemTotal, rule unified_memory), size from it.
    total_b, sized_by = cuda_total(gb10_facts)
    total = total_b / GIB
    plan = {}
    limits = {}
    order = []
    for raw in services:
        name = raw.get("name", "?") if isinstance(raw, dict) else "?"
        what = "host %s, model %s" % (host, name)
        try:
            entry = normalize(raw, MODEL_ENTRY_SPEC, what)
        except EntryError as exc:
            raise UtilizationError(str(exc))
        if entry["name"] in plan:
            raise UtilizationError("%s: two services are named %s; names must be unique" % (what, entry["name"]))
        item = service_need(entry, what, (weights_on_disk or {}).get(entry["name"]))
        item["need_fraction"] = round(item["need_gib"] / total, 4)
        item["explicit"] = entry["gpu_memory_utilization"] is not None
        item["utilization"] = entry["gpu_memory_utilization"]
        plan[entry["name"]] = item
        limits[entry["name"]] = utilization_limits(entry["max_model_len"], item["nodes"])
        order.append(entry["name"])

    # A long-context model over several nodes holds the whole host to its cap.
    target = min([target] + [cap for dummy, cap, dummy in limits.values()])
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
        raise UtilizationError("host %s: the services do not fit. %s. Lower max_model_len or max_num_seqs, split the "
                               "model over more nodes, or move a service to another host" % (host, arithmetic))

    fixed = sum(p["utilization"] for p in plan.values() if p["explicit"])
    flexible = [n for n in order if not plan[n]["explicit"]]
    flex_need = sum(plan[n]["need_gib"] for n in flexible) / total
    spare = budget - fixed - flex_need
    if flexible and spare < 0:
        raise UtilizationError("host %s: explicit gpu_memory_utilization values (%.2f) leave too little for the "
                               "others (need %.3f of %.3f). %s" % (host, fixed, flex_need, budget, arithmetic))
    # Values the inventory gave for every service are the user's choice up to the ceiling (each one is
    # also held to its cap and its need below); only the shares the filter hands out keep to the budget.
    if not flexible and round(fixed, 4) > ceiling:
        raise UtilizationError("host %s: the explicit gpu_memory_utilization values add up to %.2f, above the "
                               "ceiling %.2f (rule gpu_memory_utilization). %s" % (host, fixed, ceiling, arithmetic))
    for name in flexible:
        share = plan[name]["need_gib"] / (flex_need * total) if flex_need else 0
        plan[name]["utilization"] = floor2(plan[name]["need_gib"] / total + spare * share)
    for name in order:
        item = plan[name]
        dummy, cap, rule = limits[name]
        if item["utilization"] > cap:
            raise UtilizationError("host %s, model %s: key 'gpu_memory_utilization' %.2f is above %.2f (rule %s)" % (
                host, name, item["utilization"], cap, rule))
        if item["utilization"] * total < item["need_gib"]:
            raise UtilizationError("host %s, model %s: gpu_memory_utilization %.2f gives %.2f GiB but it needs %.2f "
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
