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
import re

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_release
# What a problem shows instead of a secret, the names and shapes of secrets, a URL as a message may show it: the one
# redaction of the collection (plugins/module_utils/redaction.py), imported here for the entry checks and their callers.
from ansible_collections.sparkfleet.gb10.plugins.module_utils.redaction import (  # noqa: F401 pylint: disable=unused-import
    SECRET_SHOWN, SECRET_VALUE, names_secret, shown_url)

CHECKPOINT_FORMATS = sorted(rulebook.setting("quantization_by_checkpoint_format"))

# Argument-spec style: type, required, default, choices, description.
MODEL_ENTRY_SPEC = {
    "name": {"type": "str", "required": True, "description": "Identity of the entry in inventory (unit names, logs)."},
    "model": {"type": "str", "required": True, "description": "Local checkpoint path or Hugging Face id given to vllm serve "
                                                              "(with a source: the name clients ask for, by default)."},
    "source": {"type": "dict", "description": "Where sparkfleet.gb10.model_store fetches the weights from (type hf, dir "
                                              "or archive; keys in model_store.SOURCE_SPEC); the service then reads "
                                              "the local copy offline."},
    "served_name": {"type": "str", "description": "--served-model-name (what clients ask for)."},
    "tokenizer": {"type": "str", "description": "--tokenizer when it differs from the model."},
    "host": {"type": "str", "default": "0.0.0.0", "description": "--host the API binds to."},
    "port": {"type": "int", "default": 8000, "description": "--port of the OpenAI API."},
    "checkpoint_format": {"type": "str", "required": True, "choices": CHECKPOINT_FORMATS,
                          "description": "Weight format on disk; picks the quantization loader (rule quantization_loader)."},
    "quantization": {"type": "str", "description": "Only to quantize a bf16 checkpoint at load time (fp8); otherwise "
                                                   "it must equal the loader the rule book picks."},
    "moe": {"type": "bool", "default": False, "description": "Mixture-of-experts model: adds --moe-backend (marlin for "
                                                             "quantized weights, triton for BF16; rule moe_backend)."},
    "architecture": {"type": "str", "description": "The checkpoint's architecture (config.json 'architectures', e.g. "
                                                   "Qwen3MoeForCausalLM); preflight checks the pinned vLLM implements "
                                                   "it. Read from config.json instead where the host has the checkpoint."},
    "model_type": {"type": "str", "description": "The checkpoint's model type (config.json 'model_type', e.g. "
                                                 "qwen3_moe); preflight checks the pinned vLLM or its transformers "
                                                 "parses it. Read from config.json instead where the host has it."},
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
    "api_key": {"type": "str", "choices": ["none"], "secret": True,
                "description": "Only 'none': the endpoint answers without a key (needs api_key_optout_reason). Without "
                               "it the endpoint has a key: vllm_service_api_key, api_key_file, or one generated on the "
                               "host."},
    "api_key_optout_reason": {"type": "str", "description": "Written reason why the endpoint answers anyone "
                                                            "(api_key: none)."},
    "extra_args": {"type": "list", "elements": "str", "default": [], "description": "Further vllm serve arguments; "
                   "flags the filter manages or the rule book forbids are refused."},
    "enforce_eager": {"type": "bool", "default": False, "description": "--enforce-eager; refused without allow_enforce_eager_reason."},
    "allow_enforce_eager_reason": {"type": "str", "description": "Written reason to accept the ~55% throughput loss."},
    "correctness_check": {"type": "bool", "default": True, "description": "fleet_verify asks the endpoint the rule "
                          "book's known answers (rule known_answers); false needs correctness_check_off_reason. The "
                          "determinism ask runs either way."},
    "correctness_check_off_reason": {"type": "str", "description": "Written reason why the model cannot answer the "
                                     "known answers (correctness_check: false), e.g. random test weights."},
    # sizing (gpu_memory_utilization filter)
    "weights_gib": {"type": "float", "description": "Weights size in GiB (whole model), if known."},
    "params_b": {"type": "float", "description": "Parameters in billions, to compute the weights size from the format."},
    "active_params_b": {"type": "float", "description": "Parameters each token reads, in billions (a MoE model's "
                        "active ones; default params_b): the decode roofline of the benchmark (rule decode_roofline)."},
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

# Keys of a sparkfleet_models entry that place it on hosts; vllm_service and preflight take them
# off before the entry is checked against MODEL_ENTRY_SPEC (they become the cluster layout).
PLACEMENT_KEYS = ("nodes", "executor", "master_port")

# The keys of a model entry's ``speculative`` mapping (--speculative-config), checked like the entry.
SPECULATIVE_SPEC = {
    "method": {"type": "str", "default": rulebook.setting("speculative_method"),
               "description": "Speculative decoding method; only %s (rule speculative_mtp)."
                              % rulebook.setting("speculative_method")},
    "num_speculative_tokens": {"type": "int", "required": True, "description": "Tokens proposed per step, e.g. 2."},
    "model": {"type": "str", "description": "A matched drafter (Hugging Face id or local path); without it the "
                                            "model's own MTP layers draft."},
}
SPECULATIVE_KEYS = tuple(SPECULATIVE_SPEC)

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


class Problem(object):
    """One problem of a model entry: the key, its value, what is wrong and the fix."""

    __slots__ = ("key", "value", "problem", "fix")

    def __init__(self, key, value, problem, fix):
        self.key = key
        self.value = value
        self.problem = problem
        self.fix = fix

    def text(self, what):
        if self.key is None:
            return "%s: %s. Fix: %s" % (what, self.problem, self.fix)
        return "%s: key '%s' is %r: %s. Fix: %s" % (what, self.key, self.value, self.problem, self.fix)


class EntryError(ValueError):
    """A model entry or cluster layout that cannot be used; the message says what to change.

    ``problems`` holds every :class:`Problem` found, not only the first, so preflight can
    report each as its own finding."""

    def __init__(self, what, problems):
        self.what = what
        self.problems = list(problems)
        super(EntryError, self).__init__("\n".join(p.text(what) for p in self.problems))


def is_secret(name, spec=None):
    """True for a key that ``spec`` (MODEL_ENTRY_SPEC's shape) marks secret; a key ``spec`` does not know is
    judged by its name as every message's redaction judges it (``hf_token``, ``api_key``; not
    ``max_num_batched_tokens``, nor ``api_key_file`` or ``HF_TOKEN_PATH``, which say where a secret is)."""
    if spec and name in spec:
        return bool(spec[name].get("secret"))
    return names_secret(name)


# Names end up in unit names, log file names and secret file names.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]+$")
# Lower bounds of the integer keys.
# Ports below 1024 need CAP_NET_BIND_SERVICE, which the sandboxed, unprivileged vLLM units do not have.
MINIMUM = {"port": 1024, "master_port": 1024, "max_model_len": 1, "max_num_seqs": 1, "max_num_batched_tokens": 1,
           "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "num_layers": 1, "num_kv_heads": 1,
           "head_dim": 1, "nnodes": 1, "node_rank": 0, "num_speculative_tokens": 1, "weights_gib": 0, "params_b": 0,
           "active_params_b": 0, "overhead_gib": 0}
MAXIMUM = {"port": 65535, "master_port": 65535}


def _check_type(value, kind):
    if kind in ("int", "float") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[kind])


_TYPE_WORDS = {"str": "a string", "path": "a path", "int": "an integer", "float": "a number", "bool": "true or false",
               "dict": "a mapping", "list": "a list"}
_ELEMENT_WORDS = {"str": "strings", "path": "paths", "int": "integers", "float": "numbers", "bool": "booleans",
                  "dict": "mappings", "list": "lists"}


def _describe(rule):
    if rule.get("elements"):
        return "a list of %s" % _ELEMENT_WORDS[rule["elements"]]
    return _TYPE_WORDS[rule["type"]]


def type_word(value):
    """What a value is, in the user's words (not the class name Ansible wraps strings in)."""
    if value is None:
        return "null"
    for kind in ("bool", "int", "float", "str", "dict", "list"):
        if isinstance(value, _TYPES[kind]):
            return _TYPE_WORDS[kind]
    return type(value).__name__


def check(entry, spec, elsewhere=()):
    """Keys, types, choices and bounds of ``entry`` against ``spec``.

    ``elsewhere``: keys valid in the same place but checked by someone else (the placement keys),
    offered as suggestions for a misspelt key. Returns ``(normalized, problems)``: every problem
    found, and the entry with defaults filled in, where a key with a problem holds its default so
    later checks do not trip over it."""
    if not isinstance(entry, dict):
        return None, [Problem(None, entry, "expected a mapping, got %s %r" % (type_word(entry), entry),
                              "write the entry as key: value pairs (keys: %s)" % ", ".join(sorted(spec)))]
    problems = []
    out = {}
    meant = set()
    for key in entry:
        if key not in spec:
            close = difflib.get_close_matches(str(key), list(spec) + list(elsewhere), n=1)
            meant.update(close)
            # A misspelt secret key is a secret too, and so is any key named like one (source.token).
            secret = ((close and spec.get(close[0], {}).get("secret")) or names_secret(key)
                      or SECRET_VALUE.match(str(entry[key])))
            problems.append(Problem(key, SECRET_SHOWN if secret else entry[key], "unknown key" + (" (did you mean '%s'?)" % close[0] if close else ""),
                                    ("rename it to '%s'" % close[0]) if close else
                                    "remove it; known keys: %s" % ", ".join(sorted(spec))))
    for key, rule in spec.items():
        default = list(rule["default"]) if isinstance(rule.get("default"), list) else rule.get("default")
        out[key] = default
        if key not in entry or entry[key] is None:
            if rule.get("required") and key not in meant:  # a misspelt required key is reported once, as misspelt
                problems.append(Problem(key, None, "required but missing",
                                        "add '%s' (%s)" % (key, rule["description"])))
            continue
        value = entry[key]
        shown = SECRET_SHOWN if rule.get("secret") else value  # a key put there by mistake is never printed
        if not _check_type(value, rule["type"]):
            problems.append(Problem(key, shown, "must be %s, got %s" % (_describe(rule), type_word(value)),
                                    "write '%s' as %s (%s)" % (key, _describe(rule), rule["description"])))
            continue
        if rule.get("elements") and not all(_check_type(v, rule["elements"]) for v in value):
            problems.append(Problem(key, shown, "must be %s" % _describe(rule),
                                    "write each item of '%s' as %s" % (key, _TYPE_WORDS[rule["elements"]])))
            continue
        if rule.get("choices") and value not in rule["choices"]:
            close = difflib.get_close_matches(str(value), [str(c) for c in rule["choices"]], n=1)
            problems.append(Problem(key, shown, "not one of %s%s" % (", ".join(map(str, rule["choices"])),
                                                                     " (did you mean '%s'?)" % close[0] if close else ""),
                                    "choose one of %s%s" % (", ".join(map(str, rule["choices"])),
                                                            "; a key itself belongs in vllm_service_api_key (vault) or "
                                                            "an api_key_file, never in the entry" if rule.get("secret") else "")))
            continue
        if rule["type"] in ("int", "float") and (value < MINIMUM.get(key, value) or value > MAXIMUM.get(key, value)):
            bounds = ">= %s" % MINIMUM[key] if key not in MAXIMUM else "%s-%s" % (MINIMUM[key], MAXIMUM[key])
            problems.append(Problem(key, shown, "out of range%s" % (
                " (a port below 1024 needs CAP_NET_BIND_SERVICE, which the unprivileged vLLM unit does not have)"
                if key in ("port", "master_port") and value < MINIMUM[key] else ""), "use a value %s" % bounds))
            continue
        if rule["type"] in ("str", "path") and not value.strip():
            problems.append(Problem(key, shown, "empty", "leave '%s' out for the default, or give it a value" % key))
            continue
        if rule["type"] == "path" and not value.startswith("/"):
            problems.append(Problem(key, shown, "not an absolute path (systemd and the service read it from /)",
                                    "write the full path, starting with /"))
            continue
        if key == "name" and not NAME_PATTERN.match(value):
            problems.append(Problem(key, shown, "not a usable name (it becomes part of unit and file names)",
                                    "use only letters, digits, '.', '_' and '-'"))
            continue
        out[key] = value
    return out, problems


def normalize(entry, spec, what):
    """Validate keys, types and choices; fill defaults. ``what`` prefixes messages (host/model).

    Raises :class:`EntryError` carrying every problem found."""
    out, problems = check(entry, spec)
    if problems:
        raise EntryError(what, problems)
    return out


def loader_check(entry):
    """``(loader, problems)`` for a normalized entry: the --quantization value (None: no flag)
    and what the rule quantization_loader refuses."""
    fmt = entry["checkpoint_format"]
    loader = rulebook.setting("quantization_by_checkpoint_format")[fmt]
    families = rulebook.setting("mxfp4_model_families")
    problems = []
    if fmt == "mxfp4" and not any(f in entry["model"].lower() for f in families):
        problems.append(Problem("checkpoint_format", fmt, "the model %s is not %s; the mxfp4 loader only reads %s "
                                "pre-quantized checkpoints (rule quantization_loader)" % (
                                    entry["model"], "/".join(families), "/".join(families)),
                                "use a gptq (gptq_marlin) or fp8 checkpoint of this model"))
    wanted = entry.get("quantization")
    if wanted is None or wanted == loader:
        return loader, problems
    if fmt == "bf16" and wanted in rulebook.setting("quantization_runtime_from_bf16"):
        return wanted, problems
    problems.append(Problem("quantization", wanted, "a %s checkpoint loads with %r (rule quantization_loader)" % (fmt, loader),
                            "remove 'quantization' or fix 'checkpoint_format'"))
    return loader, problems


def loader_for(entry, what):
    """The --quantization value for a normalized entry (None: no flag); EntryError when refused."""
    loader, problems = loader_check(entry)
    if problems:
        raise EntryError(what, problems)
    return loader


def bytes_per_param(entry):
    """Bytes a parameter takes in the entry's checkpoint format (a BF16 checkpoint served as fp8 holds one)."""
    fmt = entry.get("checkpoint_format") or "bf16"
    if fmt == "bf16" and entry.get("quantization") == "fp8":
        fmt = "fp8"
    return BYTES_PER_PARAM[fmt]


def weights_gib(entry):
    """Whole-model weight size in GiB from weights_gib or params_b x bytes per parameter."""
    if entry.get("weights_gib") is not None:
        return float(entry["weights_gib"])
    if entry.get("params_b") is not None:
        return entry["params_b"] * 1e9 * bytes_per_param(entry) / 2 ** 30
    return None


def api_key_optout(entry):
    """The written reason when a model entry opts out of its API key (``api_key: none`` with
    ``api_key_optout_reason``), else None. check_entry refuses an opt-out without a reason;
    preflight warns about every opt-out with one."""
    if not isinstance(entry, dict) or str(entry.get("api_key") or "").strip().lower() != "none":
        return None
    reason = entry.get("api_key_optout_reason")
    return reason.strip() if isinstance(reason, str) and reason.strip() else None


def moe_backend(loader):
    """The --moe-backend of a MoE entry whose --quantization is ``loader`` (None: BF16 weights), and the
    weight kind whose backend table in vLLM reads it (None where the loader never reads the flag)."""
    kernel = rulebook.setting("moe_kernel_by_loader").get(loader or "none")
    return rulebook.setting("vllm_moe_backend_by_kernel").get(kernel, rulebook.setting("vllm_moe_backend")), kernel


RELEASE_FIX = ("serve another checkpoint of this model that vLLM %s serves, or pin a release that serves it "
               "(rule version_pins: vllm_version, then make contract-lock release-facts)" % vllm_release.VLLM_VERSION)


def release_problems(entry, loader, config=None):
    """What the pinned vLLM release would refuse of a normalized entry, judged with the facts read from
    that release (plugins/module_utils/vllm_release.py). ``config``: what the host's copy of the
    checkpoint's config.json says (``architectures``, ``model_type``, ``remote_config``), which wins over
    the entry's declared ``architecture`` and ``model_type``; unknown facts are not judged."""
    release = "vLLM %s" % vllm_release.VLLM_VERSION
    config = config or {}
    problems = []
    archs = config.get("architectures") or ([entry["architecture"]] if entry.get("architecture") else [])
    arch_key = "architecture" if not config.get("architectures") else "config.json architectures"
    model_type = config.get("model_type") or entry.get("model_type")
    type_key = "model_type" if not config.get("model_type") else "config.json model_type"
    if archs and archs[0] not in vllm_release.GENERATIVE_ARCHITECTURES:
        pooling = archs[0] in vllm_release.OTHER_ARCHITECTURES
        problems.append(Problem(arch_key, archs[0], "%s %s" % (
            release, "runs it only as a pooling or drafter model, not for generation" if pooling
            else "has no implementation of this architecture (its model registry)"), RELEASE_FIX))
    parsed = set(vllm_release.VLLM_CONFIG_MODEL_TYPES) | set(vllm_release.TRANSFORMERS_MODEL_TYPES)
    remote = bool(config.get("remote_config")) and entry.get("trust_remote_code")
    if model_type and model_type not in parsed and not remote:
        problems.append(Problem(type_key, model_type, "neither %s's config registry nor transformers %s (the one "
                                "it runs with) parses this model type: the service would fail to read the "
                                "checkpoint's config" % (release, vllm_release.TRANSFORMERS_VERSION), RELEASE_FIX))
    spec = entry.get("speculative")
    if spec and isinstance(spec, dict) and spec.get("method", rulebook.setting("speculative_method")) == "mtp" \
            and not spec.get("model") and model_type and not problems:
        # Judged by model type (an architecture alone may name a model type hf_config_override converts).
        if model_type not in vllm_release.MTP_TARGET_MODEL_TYPES and \
                not (archs and archs[0] in vllm_release.MTP_TARGET_ARCHITECTURES):
            problems.append(Problem("speculative.method", "mtp", "%s has no MTP drafter for %s: its own layers "
                                    "draft only for model types %s" % (
                                        release, model_type or archs[0],
                                        ", ".join(vllm_release.MTP_TARGET_MODEL_TYPES)),
                                    "give a matched drafter in speculative.model, or drop 'speculative'"))
    if entry.get("moe"):
        backend, kernel = moe_backend(loader)
        accepted = vllm_release.MOE_BACKENDS_BY_KIND.get(kernel) if kernel else None
        if accepted is not None and backend not in accepted:
            problems.append(Problem("moe", True, "--moe-backend %s for %s MoE weights: %s accepts only %s there "
                                    "(ValueError at model build)" % (backend, kernel, release, ", ".join(accepted)),
                                    "the rule book's moe_backend must pick an accepted backend for %s weights "
                                    "(vllm_moe_backend_by_kernel)" % kernel))
    return problems


def checkpoint_dirs(models, store_dir):
    """{entry name: directory} of the checkpoints a host serves from its own disk: an entry's absolute
    ``model`` path, or the model store's copy (``<store_dir>/<name>``) of an entry with a ``source``.
    Preflight reads each directory's config.json (gb10_facts model_dirs) where it exists."""
    out = {}
    for entry in models if isinstance(models, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        if entry.get("source") and store_dir:
            out[entry["name"]] = "%s/%s" % (str(store_dir).rstrip("/"), entry["name"])
        elif isinstance(entry.get("model"), str) and entry["model"].startswith("/"):
            out[entry["name"]] = entry["model"]
    return out
