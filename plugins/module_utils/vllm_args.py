# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What vllm serve is started with, from a model entry: the entry checked against the schema, the rule book
and the pinned release (check_entry, every problem at once), then its argv (vllm_args); the environment
override check (vllm_env_check). Pure Python: the filters in plugins/filter/vllm_args.py and the preflight
action call it."""

from __future__ import annotations

import json

from ansible_collections.sparkfleet.gb10.plugins.module_utils import redaction, rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils.gpu_memory_utilization import utilization_limits
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_store import check_source
from ansible_collections.sparkfleet.gb10.plugins.module_utils.model_entry import (
    CLUSTER_SPEC, MODEL_ENTRY_SPEC, PLACEMENT_KEYS, SPECULATIVE_SPEC, Problem, check, loader_check, moe_backend,
    release_problems, weights_gib)


class ArgsError(ValueError):
    """An input that cannot be used; the message names the host, the key and the fix (the filter raises it as
    AnsibleFilterError)."""


# Flags this filter sets from entry keys: extra_args may not repeat them.
MANAGED_FLAGS = {
    "--served-model-name": "served_name", "--tokenizer": "tokenizer", "--host": "host", "--port": "port",
    "--quantization": "checkpoint_format", "--kv-cache-dtype": "kv_cache_dtype", "--max-model-len": "max_model_len",
    "--max-num-seqs": "max_num_seqs", "--max-num-batched-tokens": "max_num_batched_tokens",
    "--gpu-memory-utilization": "gpu_memory_utilization", "--enable-prefix-caching": "enable_prefix_caching",
    "--no-enable-prefix-caching": "enable_prefix_caching", "--reasoning-parser": "reasoning_parser",
    "--tool-call-parser": "tool_call_parser", "--enable-auto-tool-choice": "tool_call_parser",
    "--speculative-config": "speculative", "--tensor-parallel-size": "tensor_parallel_size",
    "--pipeline-parallel-size": "pipeline_parallel_size", "--enable-expert-parallel": "enable_expert_parallel",
    "--trust-remote-code": "trust_remote_code", "--enforce-eager": "enforce_eager",
    "--distributed-executor-backend": "cluster.executor", "--nnodes": "cluster.nnodes",
    "--node-rank": "cluster.node_rank", "--master-addr": "cluster.master_addr", "--master-port": "cluster.master_port",
    "--headless": "cluster.node_rank", "--attention-backend": "rule attention_backend",
    "--moe-backend": "rule moe_backend", "--api-key": "api_key_file",
}


def _fail(what, msg):
    raise ArgsError("%s: %s" % (what, msg))


def _flag_name(arg):
    """The flag as vLLM's FlexibleArgumentParser reads it: underscores in the name (before any '.')
    become dashes, so '--enforce_eager' is '--enforce-eager' and '--speculative_config.method' is
    '--speculative-config'."""
    name = str(arg).split("=", 1)[0]
    if not name.startswith("--"):
        return name
    return "--" + name[2:].split(".", 1)[0].replace("_", "-")


def _extra_args_problems(extra):
    forbidden_loads = rulebook.setting("vllm_forbidden_load_formats")
    problems = []
    for i, arg in enumerate(extra):
        name = _flag_name(arg)
        if str(arg).startswith("-") and "=" not in str(arg) and len(str(arg).split()) > 1:
            problems.append(Problem("extra_args", extra, "has %r as one item: vLLM's parser reads the whole string as "
                                    "one flag name and refuses it" % arg,
                                    "write the flag and its value as two items (%s), or as %s=%s"
                                    % (", ".join(repr(w) for w in str(arg).split(None, 1)),
                                       str(arg).split(None, 1)[0], str(arg).split(None, 1)[1])))
            name = _flag_name(str(arg).split()[0])
        value = arg.split("=", 1)[1] if "=" in arg else (extra[i + 1] if i + 1 < len(extra) else "")
        if name in rulebook.setting("vllm_forbidden_flags"):
            problems.append(Problem("extra_args", extra, "has %s, which the rule book forbids (rule no_enforce_eager: "
                                    "CUDA graphs off cost ~55%% throughput on SM121)" % name,
                                    "drop it; set enforce_eager: true with allow_enforce_eager_reason if you must"))
        elif name == "--load-format" and value in forbidden_loads:
            problems.append(Problem("extra_args", extra, "has --load-format %s: ImportError in NGC images "
                                    "(rule no_fastsafetensors)" % value,
                                    "drop it, the default loader is identical at runtime"))
        elif name == "--api-key":
            problems.append(Problem("extra_args", extra, "has --api-key: a key on the command line is visible in ps",
                                    "put VLLM_API_KEY=... in a root-only file and set api_key_file"))
        elif str(arg).startswith("-") and redaction.names_secret(name):
            problems.append(Problem("extra_args", extra, "has %s: a secret on the command line is visible in ps and "
                                    "in the unit file, which every account reads" % name,
                                    "drop it; the Hub token belongs in vllm_service_hf_token (HF_TOKEN in the unit's "
                                    "root-only secrets file)"))
        elif name in MANAGED_FLAGS:
            problems.append(Problem("extra_args", extra, "has %s, which the collection sets itself" % name,
                                    "set '%s' instead" % MANAGED_FLAGS[name]))
    return problems


def default_utilization(entry, cluster):
    """Rule book default for --gpu-memory-utilization and the cap that applies (``utilization_limits``, their one
    home, which the memory split uses too)."""
    return utilization_limits(entry.get("max_model_len"), cluster["nnodes"])


def check_entry(model_entry, gb10_facts, cluster):
    """Every problem of one model entry on one host, and its argv when there is none.

    Returns ``(argv, entry_problems, cluster_problems)``; ``argv`` is None when a list is not
    empty. Each problem is a :class:`Problem` (key, value, problem, fix). This is the one
    validation of a model entry: the vllm_args filter (the role) and preflight both call it."""
    entry, problems = check(model_entry, MODEL_ENTRY_SPEC, PLACEMENT_KEYS)
    clus, cluster_problems = check(cluster or {}, CLUSTER_SPEC)
    if entry is None:
        return None, problems, cluster_problems
    bad = set(p.key for p in problems) | set("cluster." + str(p.key) for p in cluster_problems)

    def fail(key, value, problem, fix):
        problems.append(Problem(key, value, problem, fix))

    if entry.get("source") is not None and "source" not in bad:
        # The shape of the source; pinning and the token are the model_store role's and preflight's call.
        problems.extend(check_source(entry["source"], require_pinned=False, have_token=True))

    quant = None
    if not bad & {"checkpoint_format", "model", "quantization"} and entry["checkpoint_format"] and entry["model"]:
        quant, more = loader_check(entry)
        problems.extend(more)

    driver = (gb10_facts or {}).get("driver") or {}
    if driver.get("forbidden_branch"):
        fail(None, None, "driver %s is on a forbidden branch %s (rule driver_branch: CUDAGraph deadlock)" % (
            driver.get("nvidia_smi_version") or driver.get("kernel_module_version"),
            rulebook.setting("driver_forbidden_branches")),
            "install the %s branch (%s)" % (rulebook.setting("driver_branch"), rulebook.setting("driver_recommended_version")))
    if driver.get("reboot_pending"):
        fail(None, None, "driver %s installed but %s loaded (rule driver_reboot_pending)" % (
            driver.get("nvidia_smi_version"), driver.get("kernel_module_version")), "reboot before starting vLLM")

    tp, pp = entry["tensor_parallel_size"], entry["pipeline_parallel_size"]
    nnodes = clus["nnodes"]
    gpus = nnodes * rulebook.setting("gpus_per_node")
    sizes_ok = not bad & {"tensor_parallel_size", "pipeline_parallel_size", "cluster.nnodes"}
    if sizes_ok and tp * pp != gpus and nnodes == 1 and tp * pp > 1:
        # No 'nodes': the entry runs on this host alone. Whether TP=1 is a fix depends on the model fitting one Spark.
        weights = weights_gib(entry) if not bad & {"weights_gib", "params_b", "checkpoint_format"} else None
        memory = ((gb10_facts or {}).get("memory") or {})
        total = memory.get("cuda_total_bytes") or memory.get("mem_total_bytes")
        fits = weights is not None and total and \
            weights + entry["overhead_gib"] <= total / 2 ** 30 * utilization_limits(entry["max_model_len"], 1)[0]
        fail("tensor_parallel_size", tp, "tensor_parallel_size %d x pipeline_parallel_size %d needs %d GPUs, but the "
             "entry has no 'nodes', so it runs on this host's one GPU (rule gb10_identity)" % (tp, pp, tp * pp),
             "list the %d hosts the model spans in 'nodes' (the first serves the API)%s"
             % (tp * pp, "; or, since its weights (%.0f GiB) fit one Spark, set tensor_parallel_size: 1" % weights
                if fits else "" if weights is not None and total else
                "; or set tensor_parallel_size: 1 if the model fits one Spark"))
    elif sizes_ok and tp * pp != gpus:
        fail("tensor_parallel_size", tp, "tensor_parallel_size %d x pipeline_parallel_size %d: TP x PP = %d but the "
             "model spans %d node(s) with one GPU each (rule gb10_identity)" % (tp, pp, tp * pp, nnodes),
             "make tensor_parallel_size x pipeline_parallel_size equal %d, the number of nodes" % gpus)
    elif sizes_ok and tp > rulebook.setting("tensor_parallel_max_nodes"):
        fail("tensor_parallel_size", tp, "tensor parallel over more than %d nodes on 200GbE is the slow path "
             "(rule parallelism_across_nodes)" % rulebook.setting("tensor_parallel_max_nodes"),
             "use pipeline_parallel_size: %d, tensor_parallel_size: 1" % gpus)
    if entry.get("active_params_b") and entry.get("params_b") and entry["active_params_b"] > entry["params_b"] \
            and not bad & {"active_params_b", "params_b"}:
        fail("active_params_b", entry["active_params_b"], "more than params_b %s: a token reads at most every "
             "parameter" % entry["params_b"], "write the parameters active per token (a MoE model's active ones), "
             "or leave it out for a dense model")
    if entry["enable_expert_parallel"] and not entry["moe"] and "moe" not in bad:
        fail("enable_expert_parallel", True, "needs a MoE model", "set moe: true or drop enable_expert_parallel")
    if not bad & {"cluster.node_rank", "cluster.nnodes"} and not 0 <= clus["node_rank"] < nnodes:
        cluster_problems.append(Problem("node_rank", clus["node_rank"], "outside 0..%d" % (nnodes - 1),
                                        "list this host once in the model's nodes"))
    if clus["executor"] == "ray" and clus["node_rank"] > 0:
        cluster_problems.append(Problem("executor", "ray", "with the ray executor only the head (node_rank 0) runs "
                                        "vllm serve; followers run ray start", "render vllm serve on the head only"))
    if clus["executor"] == "mp" and nnodes > 1 and not clus["master_addr"]:
        cluster_problems.append(Problem("master_addr", None, "required with the mp executor on %d nodes" % nnodes,
                                        "give the first node of the model its fabric address"))

    if entry["enforce_eager"] and not (entry["allow_enforce_eager_reason"] or "").strip():
        fail("enforce_eager", True, "true without 'allow_enforce_eager_reason' (rule no_enforce_eager: ~55% "
             "throughput loss on SM121)", "fix the startup problem, or write the reason in allow_enforce_eager_reason")

    if not entry["correctness_check"] and not (entry["correctness_check_off_reason"] or "").strip() \
            and "correctness_check_off_reason" not in bad:
        fail("correctness_check", False, "false without 'correctness_check_off_reason': verify would not ask the "
             "endpoint the known answers, and a model that answers fluent garbage with HTTP 200 (CUTLASS FP4 MoE on "
             "SM121) would pass (rule known_answers)", "leave correctness_check out (on), or write why this model "
             "cannot know the answers (random test weights, say) in correctness_check_off_reason")
    if entry["correctness_check_off_reason"] and entry["correctness_check"] and "correctness_check" not in bad:
        fail("correctness_check_off_reason", entry["correctness_check_off_reason"], "given while correctness_check "
             "is on, so verify still asks the known answers (rule known_answers)",
             "set correctness_check: false to turn the known answers off, or remove the reason")

    # vLLM takes a model path literally: a relative one from the unit's working directory, '~' never expanded.
    if isinstance(entry["model"], str) and entry["model"].startswith(("~", "./", "../")) and "model" not in bad:
        fail("model", entry["model"], "is a %s path: vllm serve takes it as it is, from the unit's working directory "
             "(no shell expands '~'), so it would find no model there" % (
                 "home-relative" if entry["model"].startswith("~") else "relative"),
             "write the absolute path on the host (e.g. /var/lib/sparkfleet/models/<name>), a Hugging Face id "
             "(org/name), or give a source: and let model_store place it")
    if entry["api_key"] == "none" and not (entry["api_key_optout_reason"] or "").strip() and "api_key_optout_reason" not in bad:
        fail("api_key", "none", "the endpoint would answer anyone who reaches its port, without "
             "'api_key_optout_reason'", "leave api_key out (a key is generated for the endpoint), or write why "
             "it must be open in api_key_optout_reason")
    if entry["api_key"] == "none" and entry["api_key_file"]:
        fail("api_key_file", entry["api_key_file"], "given with api_key: none (no key)", "drop one of the two")
    if entry["api_key_optout_reason"] and entry["api_key"] != "none" and "api_key" not in bad:
        fail("api_key_optout_reason", entry["api_key_optout_reason"], "given without api_key: none, so the "
             "endpoint still has a key", "set api_key: none to open the endpoint, or remove the reason")

    gmu = entry["gpu_memory_utilization"]
    default, cap, rule_id = default_utilization(entry, clus)
    if gmu is None:
        gmu = default
    elif not 0 < gmu <= cap:
        fail("gpu_memory_utilization", gmu, "outside 0 < x <= %s (rule %s)" % (cap, rule_id),
             "use at most %s, or leave it out for the rule book default %s" % (cap, default))

    mbt = entry["max_num_batched_tokens"]
    if entry["mamba"] and entry["enable_prefix_caching"]:
        floor = rulebook.setting("mamba_align_block_size")
        if mbt is None:
            mbt = rulebook.setting("mamba_max_num_batched_tokens")
        elif mbt < floor:
            fail("max_num_batched_tokens", mbt, "below %d; with prefix caching on a Mamba model vLLM needs >= %d "
                 "(rule mamba_prefix_caching)" % (floor, floor),
                 "use %d, or turn enable_prefix_caching off" % rulebook.setting("mamba_max_num_batched_tokens"))

    spec_json = None
    if entry["speculative"] is not None:
        # Keys, types and bounds from the schema (SPECULATIVE_SPEC), then the rule book's method.
        spec, more = check(entry["speculative"], SPECULATIVE_SPEC)
        for problem in more:
            problem.key = "speculative" if problem.key is None else "speculative.%s" % problem.key
        problems.extend(more)
        wrong = set(p.key for p in more)
        method = spec["method"]
        if "speculative.method" not in wrong and method != rulebook.setting("speculative_method"):
            fail("speculative.method", method, "not mtp (rule speculative_mtp: draft_model runs a full model as drafter)",
                 "use method: mtp, with 'model' for a matched drafter")
        body = {"method": method}
        if spec["model"]:
            body["model"] = spec["model"]
        body["num_speculative_tokens"] = spec["num_speculative_tokens"]
        spec_json = json.dumps(body, separators=(",", ":"))

    problems.extend(_extra_args_problems(entry["extra_args"]))
    if not bad & {"checkpoint_format", "model", "quantization", "speculative", "architecture", "model_type"} \
            and not any(str(p.key).startswith(("quantization", "checkpoint_format")) for p in problems):
        config = ((gb10_facts or {}).get("model_configs") or {}).get(entry["name"])
        problems.extend(release_problems(entry, quant, config))
    if problems or cluster_problems:
        return None, problems, cluster_problems

    argv = [clus["vllm_bin"], "serve", entry["model"]]

    def opt(flag, value):
        if value is not None:
            argv.extend([flag, str(value)])

    opt("--served-model-name", entry["served_name"])
    opt("--tokenizer", entry["tokenizer"])
    opt("--host", entry["host"])
    opt("--port", entry["port"])
    if tp * pp > 1:
        opt("--tensor-parallel-size", tp)
        opt("--pipeline-parallel-size", pp)
        opt("--distributed-executor-backend", clus["executor"])
        if clus["executor"] == "mp" and nnodes > 1:
            opt("--nnodes", nnodes)
            opt("--node-rank", clus["node_rank"])
            opt("--master-addr", clus["master_addr"])
            opt("--master-port", clus["master_port"])
            if clus["node_rank"] > 0:
                argv.append("--headless")
    if entry["enable_expert_parallel"]:
        argv.append("--enable-expert-parallel")
    opt("--attention-backend", rulebook.setting("vllm_attention_backend"))
    if entry["moe"]:
        opt("--moe-backend", moe_backend(quant)[0])
    opt("--quantization", quant)
    opt("--kv-cache-dtype", entry["kv_cache_dtype"])
    if entry["trust_remote_code"]:
        argv.append("--trust-remote-code")
    opt("--max-model-len", entry["max_model_len"])
    opt("--max-num-seqs", entry["max_num_seqs"])
    opt("--max-num-batched-tokens", mbt)
    opt("--gpu-memory-utilization", "%.2f" % gmu)
    argv.append("--enable-prefix-caching" if entry["enable_prefix_caching"] else "--no-enable-prefix-caching")
    opt("--reasoning-parser", entry["reasoning_parser"])
    if entry["tool_call_parser"]:
        argv.append("--enable-auto-tool-choice")
        opt("--tool-call-parser", entry["tool_call_parser"])
    opt("--speculative-config", spec_json)
    if entry["enforce_eager"]:
        argv.append("--enforce-eager")
    argv.extend(entry["extra_args"])
    return argv, problems, cluster_problems


def vllm_args(model_entry, gb10_facts, cluster, host=None):
    host = host or "this host"
    name = model_entry.get("name", "?") if isinstance(model_entry, dict) else "?"
    what = "host %s, model %s" % (host, name)
    if gb10_facts is None:
        gb10_facts = {}
    if not isinstance(gb10_facts, dict):
        _fail(what, "gb10_facts must be the dict ansible_facts.gb10, got %s" % type(gb10_facts).__name__)
    argv, problems, cluster_problems = check_entry(model_entry, gb10_facts, cluster)
    if problems or cluster_problems:
        # Every problem at once, one a line, not only the first.
        raise ArgsError("\n".join([p.text(what) for p in problems] +
                                  [p.text(what + ", cluster") for p in cluster_problems]))
    return argv


def vllm_env_check(env, host=None, variable="vllm_service_environment"):
    """Return env unchanged, or fail naming every variable the kernel rules forbid."""
    if not isinstance(env, dict):
        raise ArgsError("vllm_env_check: %s must be a dict, got %s" % (variable, type(env).__name__))
    found = rulebook.env_violations(env)
    if found:
        raise ArgsError("%s: %s sets %s" % (host or "this host", variable, "; ".join(
            "%s=%s, which rule %s forbids (%s)" % item for item in found)))
    return env
