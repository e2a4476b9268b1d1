# -*- coding: utf-8 -*-
"""The configurations the source documents actually ran, as model entries plus their recorded argv."""

import shlex

S000 = "000_845b8fc6b18b9805.txt"
S001 = "001_58e9b2e9082b25c9.txt"
S002 = "002_40fa6c16cebd9db4.txt"
S003 = "003_484c5823bb44b94f.txt"
S004 = "004_c6b85e69869f3af9.txt"


def parse_argv(argv):
    """argv (list or shell string) -> (positional, {flag: value or True}); accepts --flag=value and --flag value."""
    if isinstance(argv, str):
        argv = shlex.split(argv)
    opts = {}
    positional = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                opts[key] = value
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                opts[arg] = argv[i + 1]
                i += 1
            else:
                opts[arg] = True
        else:
            positional.append(arg)
        i += 1
    return positional, opts


SEEDS = {
    # 000: two nodes, Ray, QSFP RoCE, benchmark config line
    "qwen3_235b_gptq_tp2_ep2": {
        "source": S000,
        "entry": {"name": "qwen3-235b", "model": "Qwen/Qwen3-235B-A22B-GPTQ-Int4", "checkpoint_format": "gptq",
                  "moe": True, "reasoning": True, "tensor_parallel_size": 2, "enable_expert_parallel": True,
                  "gpu_memory_utilization": 0.87, "params_b": 235, "num_layers": 94, "num_kv_heads": 4,
                  "head_dim": 128, "max_model_len": 32768, "max_num_seqs": 4},
        "cluster": {"executor": "ray", "nnodes": 2},
        "ran": "vllm serve Qwen/Qwen3-235B-A22B-GPTQ-Int4 --tensor-parallel-size 2 --enable-expert-parallel "
               "--attention-backend=TRITON_ATTN --quantization=gptq_marlin --kv-cache-dtype=fp8 "
               "--gpu-memory-utilization=0.87",
        # flags the rule book adds on purpose, with the reason
        "added": {
            "--moe-backend": "003: Marlin is the MoE kernel on SM121 (CUTLASS FP4 gives garbage)",
            "--distributed-executor-backend": "explicit executor instead of vLLM's guess",
            "--pipeline-parallel-size": "explicit 1",
            "--enable-prefix-caching": "000 measured a 97% prefix-cache hit rate, so caching was on",
            "--host": "explicit bind", "--port": "explicit port", "--max-model-len": "sizing input",
            "--max-num-seqs": "sizing input",
        },
        "removed": {},
    },
    # 004: two nodes, Ray, the installer's primary production model
    "qwen35_122b_fp8_tp2": {
        "source": S004,
        "entry": {"name": "qwen35-122b", "model": "/home/atc/hf_models/Qwen3.5-122B-A10B-FP8",
                  "served_name": "manthan-general", "port": 8000, "checkpoint_format": "fp8", "moe": True,
                  "reasoning": True, "tensor_parallel_size": 2, "trust_remote_code": True,
                  "gpu_memory_utilization": 0.80, "max_model_len": 16384, "reasoning_parser": "qwen3",
                  "tool_call_parser": "qwen3_coder", "max_num_batched_tokens": 4096},
        "cluster": {"executor": "ray", "nnodes": 2},
        "ran": "vllm serve /home/atc/hf_models/Qwen3.5-122B-A10B-FP8 --served-model-name manthan-general "
               "--port 8000 --tensor-parallel-size 2 --distributed-executor-backend ray --trust-remote-code "
               "--gpu-memory-utilization 0.80 --max-model-len 16384 --enforce-eager --enable-prefix-caching "
               "--reasoning-parser qwen3 --tool-call-parser qwen3_coder --max-num-batched-tokens 4096",
        "added": {
            "--attention-backend": "003: TRITON_ATTN on SM121",
            "--moe-backend": "003: Marlin MoE kernel",
            "--quantization": "003: the loader follows the checkpoint format (fp8), not auto-detection",
            "--kv-cache-dtype": "FP8 KV cache as every other GB10 run",
            "--enable-auto-tool-choice": "vLLM ignores --tool-call-parser without it",
            "--pipeline-parallel-size": "explicit 1", "--host": "explicit bind",
        },
        "removed": {"--enforce-eager": "003: CUDA graphs off cost ~55% throughput on SM121 (rule no_enforce_eager)"},
    },
    # 002: Spark 1, single node, NVFP4 + MTP=2
    "qwen36_35b_nvfp4_mtp2": {
        "source": S002,
        "entry": {"name": "qwen36-35b", "model": "RedHatAI/Qwen3.6-35B-A3B-NVFP4", "tokenizer": "Qwen/Qwen3.6-35B-A3B",
                  "checkpoint_format": "nvfp4", "moe": True, "mamba": True, "reasoning": True,
                  "trust_remote_code": True, "max_model_len": 131072, "gpu_memory_utilization": 0.55,
                  "tool_call_parser": "qwen3_coder", "reasoning_parser": "qwen3",
                  "speculative": {"method": "mtp", "num_speculative_tokens": 2}, "max_num_batched_tokens": 8192},
        "cluster": {"nnodes": 1},
        "ran": "vllm serve RedHatAI/Qwen3.6-35B-A3B-NVFP4 --tokenizer Qwen/Qwen3.6-35B-A3B "
               "--quantization compressed-tensors --kv-cache-dtype fp8 --trust-remote-code --max-model-len 131072 "
               "--gpu-memory-utilization 0.55 --enable-auto-tool-choice --tool-call-parser qwen3_coder "
               "--reasoning-parser qwen3 --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":2}' "
               "--enable-prefix-caching --max-num-batched-tokens 8192 --host 0.0.0.0 --port 8000",
        "added": {
            "--attention-backend": "003: TRITON_ATTN on SM121",
            "--moe-backend": "003: Marlin MoE kernel (NVFP4 experts must not take CUTLASS FP4)",
        },
        "removed": {},
    },
    # 002: Spark 2, Gemma4 FP8 (runtime from BF16) with a matched MTP drafter
    "gemma4_fp8_drafter": {
        "source": S002,
        "entry": {"name": "gemma4-26b", "model": "google/gemma-4-26B-A4B-it", "checkpoint_format": "bf16",
                  "quantization": "fp8", "moe": True, "trust_remote_code": True, "max_model_len": 65536,
                  "gpu_memory_utilization": 0.80, "tool_call_parser": "hermes",
                  "speculative": {"method": "mtp", "model": "google/gemma-4-26B-A4B-it-assistant",
                                  "num_speculative_tokens": 4},
                  "max_num_batched_tokens": 8192},
        "cluster": {"nnodes": 1},
        "ran": "vllm serve google/gemma-4-26B-A4B-it --quantization fp8 --kv-cache-dtype fp8 --trust-remote-code "
               "--max-model-len 65536 --gpu-memory-utilization 0.80 --enable-auto-tool-choice "
               "--tool-call-parser hermes --speculative-config "
               "'{\"method\":\"mtp\",\"model\":\"google/gemma-4-26B-A4B-it-assistant\",\"num_speculative_tokens\":4}' "
               "--enable-prefix-caching --host 0.0.0.0 --max-num-batched-tokens 8192 --port 8000",
        "added": {
            "--attention-backend": "002 forced TRITON_ATTN for Gemma4 too (mixed head sizes); explicit here",
            "--moe-backend": "003: Marlin MoE kernel",
        },
        "removed": {},
    },
    # 003: gpt-oss-120b is the one model the mxfp4 loader reads
    "gpt_oss_120b_mxfp4": {
        "source": S003,
        "entry": {"name": "gpt-oss-120b", "model": "openai/gpt-oss-120b", "checkpoint_format": "mxfp4", "moe": True,
                  "reasoning": True},
        "cluster": {"nnodes": 1},
        "ran": "vllm serve openai/gpt-oss-120b --attention-backend=TRITON_ATTN --moe-backend=marlin "
               "--quantization=mxfp4",
        "added": {"--kv-cache-dtype": "FP8 KV default", "--gpu-memory-utilization": "0.87, top of the safe range",
                  "--enable-prefix-caching": "default on", "--host": "explicit bind", "--port": "explicit port"},
        "removed": {},
    },
    # 001: three nodes over 200GbE: pipeline parallel across nodes
    "llama405b_awq_pp3": {
        "source": S001,
        "entry": {"name": "llama-405b", "model": "hugging-quants/Meta-Llama-3.1-405B-Instruct-AWQ-INT4",
                  "checkpoint_format": "awq", "pipeline_parallel_size": 3, "tensor_parallel_size": 1},
        "cluster": {"executor": "ray", "nnodes": 3},
        "ran": "vllm serve hugging-quants/Meta-Llama-3.1-405B-Instruct-AWQ-INT4 --tensor-parallel-size 1 "
               "--pipeline-parallel-size 3",
        "added": {"--attention-backend": "003", "--quantization": "AWQ INT4 through Marlin (awq_marlin)",
                  "--kv-cache-dtype": "FP8 KV default", "--gpu-memory-utilization": "0.87 safe default",
                  "--enable-prefix-caching": "default on", "--host": "explicit bind", "--port": "explicit port",
                  "--distributed-executor-backend": "explicit executor"},
        "removed": {},
    },
}
