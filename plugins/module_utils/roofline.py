# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How fast a model entry can decode on Sparks, and how a measured figure reads against that and the field's.

The decode roofline (rule ``decode_roofline``): one stream reads, for every token, the weights active for it and
its context's KV cache; it cannot go faster than the node's memory bandwidth over those bytes. Tensor parallelism
splits the bytes over its nodes; pipeline stages run one after another and do not. Concurrent streams share one
read of a dense model's weights, but a MoE model's batch activates more experts, so the aggregate bound of a
batch is not known from the entry: the share of the roofline is given per stream (aggregate / concurrency), and
the warning is made at concurrency 1 only, where the bound holds.

Published figures (rule ``published_figures``) are matched by model and tensor parallel size.

Pure Python: the benchmark's report and its tests read it.
"""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import KV_BYTES, bytes_per_param

GB = 1e9


def decode_roofline(entry, context_tokens=0, bandwidth_gb_s=None):
    """The most output tokens per second one stream of ``entry`` can decode, with the arithmetic:
    ``{tok_s, bytes_per_token, weight_bytes, kv_bytes, tensor_parallel_size, active_params_b, bandwidth_gb_s}``
    (bytes per token on one node). ``context_tokens``: the tokens whose KV cache each step reads (prompt and
    output so far; 0 leaves the KV reads out, an upper bound). None where the entry gives neither
    ``active_params_b`` nor ``params_b``, or is a MoE model (``moe``) without ``active_params_b``."""
    # A MoE model reads its active experts only: its total parameters would put the bound several times too low.
    active = entry.get("active_params_b") or (None if entry.get("moe") else entry.get("params_b"))
    if not active:
        return None
    bandwidth = bandwidth_gb_s or rulebook.setting("gb10_memory_bandwidth_gb_s")
    tp = int(entry.get("tensor_parallel_size") or 1)
    weights = active * GB * bytes_per_param(entry)
    kv = 0.0
    if context_tokens and all(entry.get(k) for k in ("num_layers", "num_kv_heads", "head_dim")):
        kv = 2.0 * entry["num_layers"] * entry["num_kv_heads"] * entry["head_dim"] * \
            KV_BYTES[entry.get("kv_cache_dtype") or "auto"] * context_tokens
    per_node = (weights + kv) / tp
    return {
        "tok_s": round(bandwidth * GB / per_node, 1),
        "bytes_per_token": int(per_node),
        "weight_bytes": int(weights / tp),
        "kv_bytes": int(kv / tp),
        "tensor_parallel_size": tp,
        "active_params_b": float(active),
        "bandwidth_gb_s": bandwidth,
    }


def published(entry, figures=None):
    """The rule book's published figure for ``entry`` (same model, same tensor parallel size), else None."""
    figures = rulebook.setting("published_figures") if figures is None else figures
    tp = int(entry.get("tensor_parallel_size") or 1)
    for figure in figures:
        if figure["model"] == entry.get("model") and int(figure["tensor_parallel_size"]) == tp:
            return figure
    return None


def _published_at(figure, concurrency):
    """The published aggregate at ``concurrency`` as ``(low, high)`` (a single figure twice), else None."""
    value = (figure or {}).get("output_tok_s", {}).get(str(concurrency))
    if value is None:
        return None
    return (float(value[0]), float(value[1])) if isinstance(value, (list, tuple)) else (float(value), float(value))


def compare(entry, measured, context_tokens=0, warn_share=None, figures=None):
    """Each measured point beside the bound and the field: ``measured`` maps a concurrency to the output tokens per
    second summed over its streams. One row per concurrency, sorted: ``{concurrency, output_tok_s, per_stream_tok_s,
    roofline_tok_s, roofline_share, published, published_share, warning}`` (``published``: the field's aggregate as
    ``[low, high]``; ``published_share``: measured over its low end; ``warning``: the text of a single-stream figure
    below the rule book's share of the roofline, else None)."""
    warn_share = rulebook.setting("roofline_warn_share") if warn_share is None else warn_share
    bound = decode_roofline(entry, context_tokens)
    figure = published(entry, figures)
    rows = []
    for concurrency in sorted(int(c) for c in measured):
        total = float(measured[concurrency] if concurrency in measured else measured[str(concurrency)])
        per_stream = total / concurrency
        share = round(per_stream / bound["tok_s"], 3) if bound else None
        field = _published_at(figure, concurrency)
        warning = None
        if share is not None and concurrency == 1 and share > 1:
            warning = ("%.1f tok/s is above the decode roofline %.1f tok/s (%.2f GB a token on each node): the entry's "
                       "sizes are wrong (active_params_b, checkpoint_format, tensor_parallel_size)" % (
                           per_stream, bound["tok_s"], bound["bytes_per_token"] / GB))
        elif share is not None and concurrency == 1 and share < warn_share:
            warning = ("%.1f tok/s is %.0f%% of the decode roofline %.1f tok/s (%s GB/s over %.2f GB a token on each "
                       "node), below the rule book's %.0f%% (rule decode_roofline): look for CUDA graphs off, NCCL "
                       "on sockets or a slow kernel path" % (
                           per_stream, 100 * share, bound["tok_s"], bound["bandwidth_gb_s"],
                           bound["bytes_per_token"] / GB, 100 * warn_share))
        rows.append({
            "concurrency": concurrency,
            "output_tok_s": round(total, 2),
            "per_stream_tok_s": round(per_stream, 2),
            "roofline_tok_s": bound["tok_s"] if bound else None,
            "roofline_share": share,
            "published": list(field) if field else None,
            "published_share": round(total / field[0], 3) if field and field[0] else None,
            "warning": warning,
        })
    return rows
