# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Schema of a served-model entry and of the cluster layout.

One entry of ``sparkfleet_models`` in inventory describes one ``vllm serve``.
The schema is kept here, in Ansible argument-spec form, so the vllm_args and
gpu_memory_utilization filters, preflight checks and role argument specs all
validate the same keys.
"""

from __future__ import annotations

import difflib

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

CHECKPOINT_FORMATS = sorted(rulebook.setting("quantization_by_checkpoint_format"))

# Argument-spec style: type, required, default, choices, description.
MODEL_ENTRY_SPEC = {
    "name": {"type": "str", "required": True, "description": "Identity of the entry in inventory (unit names, logs)."},
    "model": {"type": "str", "required": True, "description": "Local checkpoint path or Hugging Face id given to vllm serve."},
    "served_name": {"type": "str", "description": "--served-model-name (what clients ask for)."},
    "tokenizer": {"type": "str", "description": "--tokenizer when it differs from the model."},
    "host": {"type": "str", "default": "0.0.0.0", "description": "--host the API binds to."},
    "port": {"type": "int", "default": 8000, "description": "--port of the OpenAI API."},
    "checkpoint_format": {"type": "str", "required": True, "choices": CHECKPOINT_FORMATS,
                          "description": "Weight format on disk; picks the quantization loader (rule quantization_loader)."},
    "quantization": {"type": "str", "description": "Only to quantize a bf16 checkpoint at load time (fp8); otherwise "
                                                   "it must equal the loader the rule book picks."},
    "moe": {"type": "bool", "default": False, "description": "Mixture-of-experts model: adds --moe-backend marlin."},
    "mamba": {"type": "bool", "default": False, "description": "Has Mamba/SSM (hybrid) layers: prefix caching needs the block-size rule."},
    "reasoning": {"type": "bool", "default": False, "description": "Reasoning model (clients need max_tokens >= 512)."},
    "reasoning_parser": {"type": "str", "description": "--reasoning-parser (e.g. qwen3)."},
    "tool_call_parser": {"type": "str", "description": "--tool-call-parser; also turns on --enable-auto-tool-choice."},
    "max_model_len": {"type": "int", "description": "--max-model-len."},
    "max_num_seqs": {"type": "int", "description": "--max-num-seqs."},
    "max_num_batched_tokens": {"type": "int", "description": "--max-num-batched-tokens (>= 2128 for mamba with prefix caching; 8192 by default then)."},
    "kv_cache_dtype": {"type": "str", "default": rulebook.setting("kv_cache_dtype_default"),
                       "choices": rulebook.setting("kv_cache_dtype_allowed"), "description": "--kv-cache-dtype."},
    "enable_prefix_caching": {"type": "bool", "default": True, "description": "--enable-prefix-caching."},
    "speculative": {"type": "dict", "description": "Speculative decoding: method (mtp only), num_speculative_tokens, "
                                                   "model (optional matched drafter)."},
    "tensor_parallel_size": {"type": "int", "default": 1, "description": "--tensor-parallel-size (in nodes: one GPU each)."},
    "pipeline_parallel_size": {"type": "int", "default": 1, "description": "--pipeline-parallel-size."},
    "enable_expert_parallel": {"type": "bool", "default": False, "description": "--enable-expert-parallel (MoE only)."},
    "gpu_memory_utilization": {"type": "float", "description": "Explicit --gpu-memory-utilization; default from the rule book."},
    "trust_remote_code": {"type": "bool", "default": False, "description": "--trust-remote-code."},
    "api_key_file": {"type": "path", "description": "Environment file holding VLLM_API_KEY=...; read by the service "
                                                    "(EnvironmentFile), never put on the command line."},
    "extra_args": {"type": "list", "elements": "str", "default": [], "description": "Further vllm serve arguments; "
                   "flags the filter manages or the rule book forbids are refused."},
    "enforce_eager": {"type": "bool", "default": False, "description": "--enforce-eager; refused without allow_enforce_eager_reason."},
    "allow_enforce_eager_reason": {"type": "str", "description": "Written reason to accept the ~55% throughput loss."},
    # sizing (gpu_memory_utilization filter)
    "weights_gib": {"type": "float", "description": "Weights size in GiB (whole model), if known."},
    "params_b": {"type": "float", "description": "Parameters in billions, to compute the weights size from the format."},
    "num_layers": {"type": "int", "description": "Attention layers (KV cache sizing)."},
    "num_kv_heads": {"type": "int", "description": "KV heads (KV cache sizing)."},
    "head_dim": {"type": "int", "description": "Head dimension (KV cache sizing)."},
    "overhead_gib": {"type": "float", "default": 3.0, "description": "Activations, CUDA graphs and allocator slack per node."},
}

CLUSTER_SPEC = {
    "executor": {"type": "str", "default": "mp", "choices": ["mp", "ray"], "description": "--distributed-executor-backend."},
    "nnodes": {"type": "int", "default": 1, "description": "Nodes the model spans (one GPU each)."},
    "node_rank": {"type": "int", "default": 0, "description": "This node's rank; 0 is the head."},
    "master_addr": {"type": "str", "description": "Head's fabric address (mp executor)."},
    "master_port": {"type": "int", "default": 29501, "description": "Rendezvous port (mp executor)."},
    "vllm_bin": {"type": "str", "default": "vllm", "description": "The vllm executable (e.g. the venv's bin/vllm)."},
}

SPECULATIVE_KEYS = ("method", "num_speculative_tokens", "model")

# Bytes per parameter on disk/in memory by checkpoint format (group scales included).
BYTES_PER_PARAM = {
    "bf16": 2.0,
    "fp8": 1.0,
    "gptq": 0.53,    # int4 + a scale/zero per group of 128
    "awq": 0.53,
    "nvfp4": 0.5625,  # 4 bit + an fp8 scale per 16
    "mxfp4": 0.53125,  # 4 bit + an 8 bit scale per 32
}

KV_BYTES = {"auto": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}

_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "dict": (dict,), "list": (list,),
          "path": (str,)}


class EntryError(ValueError):
    """A model entry or cluster layout that cannot be used; the message says what to change."""


def _check_type(value, kind):
    if kind in ("int", "float") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[kind])


def normalize(entry, spec, what):
    """Validate keys, types and choices; fill defaults. ``what`` prefixes messages (host/model)."""
    if not isinstance(entry, dict):
        raise EntryError("%s: expected a dict, got %s" % (what, type(entry).__name__))
    out = {}
    for key in entry:
        if key not in spec:
            close = difflib.get_close_matches(str(key), list(spec), n=1)
            raise EntryError("%s: unknown key '%s'%s. Known keys: %s" % (
                what, key, " (did you mean '%s'?)" % close[0] if close else "", ", ".join(sorted(spec))))
    for key, rule in spec.items():
        if key not in entry or entry[key] is None:
            if rule.get("required"):
                raise EntryError("%s: key '%s' is required (%s)" % (what, key, rule["description"]))
            out[key] = list(rule["default"]) if isinstance(rule.get("default"), list) else rule.get("default")
            continue
        value = entry[key]
        if not _check_type(value, rule["type"]):
            raise EntryError("%s: key '%s' must be a %s, got %r" % (what, key, rule["type"], value))
        if rule.get("elements") and not all(_check_type(v, rule["elements"]) for v in value):
            raise EntryError("%s: every item of '%s' must be a %s, got %r" % (what, key, rule["elements"], value))
        if rule.get("choices") and value not in rule["choices"]:
            raise EntryError("%s: key '%s' is %r; choose one of %s" % (what, key, value, ", ".join(map(str, rule["choices"]))))
        out[key] = value
    return out


def loader_for(entry, what):
    """The --quantization value for a normalized entry (None: no flag)."""
    fmt = entry["checkpoint_format"]
    loader = rulebook.setting("quantization_by_checkpoint_format")[fmt]
    families = rulebook.setting("mxfp4_model_families")
    if fmt == "mxfp4" and not any(f in entry["model"].lower() for f in families):
        raise EntryError("%s: key 'checkpoint_format' is mxfp4 but the model is not %s; the mxfp4 loader only reads "
                         "gpt-oss pre-quantized checkpoints (rule quantization_loader). Use gptq (gptq_marlin) or "
                         "fp8 checkpoints for other MoE models" % (what, "/".join(families)))
    wanted = entry.get("quantization")
    if wanted is None or wanted == loader:
        return loader
    if fmt == "bf16" and wanted in rulebook.setting("quantization_runtime_from_bf16"):
        return wanted
    raise EntryError("%s: key 'quantization' is %r but a %s checkpoint loads with %r (rule quantization_loader); "
                     "remove 'quantization' or fix 'checkpoint_format'" % (what, wanted, fmt, loader))


def weights_gib(entry):
    """Whole-model weight size in GiB from weights_gib or params_b x bytes per parameter."""
    if entry.get("weights_gib") is not None:
        return float(entry["weights_gib"])
    if entry.get("params_b") is not None:
        fmt = entry.get("checkpoint_format") or "bf16"
        per = BYTES_PER_PARAM[fmt]
        if fmt == "bf16" and entry.get("quantization") == "fp8":
            per = BYTES_PER_PARAM["fp8"]
        return entry["params_b"] * 1e9 * per / 2 ** 30
    return None
