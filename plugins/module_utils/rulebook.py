# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The GB10 / SM121 rule book.

Every fact about DGX Spark (GB10, SM121) that changes what this collection
does lives here, once: the setting, the reason, and the source document it
comes from. Modules, filters, the ``sparkfleet.gb10.rulebook`` lookup (and
through it role defaults and templates) and ``docs/rules.md`` all read from
this module, so they cannot disagree.

Where two source documents disagree, the rule carries a ``decision`` that
says which one wins and why.

Pure Python, no Ansible imports: importable from modules, filters, lookups,
tools and tests alike.
"""

from __future__ import annotations

import copy

# Source documents (file names under the project's seed library).
S000 = "000_845b8fc6b18b9805.txt"  # two-node Qwen3-235B benchmarks, model selection
S001 = "001_58e9b2e9082b25c9.txt"  # 3x DGX Spark distributed inference research
S002 = "002_40fa6c16cebd9db4.txt"  # dual-Spark systemd stack (Qwen3.6 NVFP4, Gemma4 FP8)
S003 = "003_484c5823bb44b94f.txt"  # what SM121 requires from vLLM
S004 = "004_c6b85e69869f3af9.txt"  # native vLLM installer for GB10 (8 fixes)

SOURCES = (S000, S001, S002, S003, S004)

# Field reports from Spark owners, for facts the source documents do not cover (kernels that came after them).
# Each names the machines, the versions and what was seen; a rule citing one says what it concluded.
R_KERNEL_1019_NCCL = "https://github.com/MiaAI-Lab/DeepSeek-v4.1-Flash-DGX-Sparks/issues/14"
R_KERNEL_1019_CMA = "https://github.com/MiaAI-Lab/DeepSeek-v4-Flash-DSpark-2x-DGX-Spark/issues/259"
R_KERNEL_1019_WEDGE = "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/1358"

# Sparks that lost SSH and needed a power cycle when unified memory ran out, with gpu-memory-utilization well
# below the ceiling (rule memory_guard).
R_UMA_HOST_WEDGE = "https://github.com/vllm-project/vllm/issues/46307"
R_UMA_HARD_RESET = "https://github.com/NVIDIA/dgx-spark-playbooks/issues/97"

FIELD_REPORTS = (R_KERNEL_1019_NCCL, R_KERNEL_1019_CMA, R_KERNEL_1019_WEDGE, R_UMA_HOST_WEDGE, R_UMA_HARD_RESET)

# Public records (upstream source files and documentation, pinned to the commit read) for facts about the platform
# the Sparks boot with that neither the source documents nor field reports cover: how Secure Boot is read and which
# keys sign the NVIDIA module (rule secure_boot_modules).
P_EFI_GLOBAL_GUID = ("https://github.com/torvalds/linux/blob/348324c5b10bcba8d9daabdfb85a6927311be34f/"
                     "include/linux/efi.h")
P_EFIVARFS_LAYOUT = "https://docs.kernel.org/filesystems/efivarfs.html"
P_KERNEL_SB_STATE = ("https://github.com/torvalds/linux/blob/147ae83bf4e10539dc34ad6eff054906b3fb00bf/"
                     "drivers/firmware/efi/libstub/secureboot.c")
P_KMOD_SIGNER = ("https://github.com/kmod-project/kmod/blob/01d9c6a0760971af9f8bcecd9c5935abd4a538e3/"
                 "libkmod/libkmod-signature.c")
P_UBUNTU_KERNEL_CERTS = ("https://github.com/rene/eve-kernel/blob/6a001581c87c4d4b1ea29a9ef5fe9fb9b60c74f2/"
                         "debian/canonical-certs.pem")
P_DKMS_UBUNTU_MOK = "https://github.com/dkms-project/dkms/blob/04154266549a7b3723f8e7a18515b59c34e921b1/dkms.in"
P_MOKUTIL_TEST_KEY = "https://github.com/lcp/mokutil/blob/a0e52a974e3ef222ee454bab76602afd7f4c0440/src/mokutil.c"

PUBLIC_RECORDS = (P_EFI_GLOBAL_GUID, P_EFIVARFS_LAYOUT, P_KERNEL_SB_STATE, P_KMOD_SIGNER, P_UBUNTU_KERNEL_CERTS,
                  P_DKMS_UBUNTU_MOK, P_MOKUTIL_TEST_KEY)

# The stack limit of the seeds' vLLM containers (002: --ulimit stack=67108864), in bytes.
_STACK_BYTES = 64 * 1024 * 1024

RULES_BEGIN = "<!-- rules:begin -->"
RULES_END = "<!-- rules:end -->"


class Rule(object):
    """One behaviour-changing fact: id, settings, reason, sources, decision."""

    __slots__ = ("id", "title", "settings", "reason", "sources", "decision")

    def __init__(self, rule_id, title, settings, reason, sources, decision=None):
        self.id = rule_id
        self.title = title
        self.settings = settings
        self.reason = reason
        self.sources = tuple(sources)
        self.decision = decision

    def as_dict(self):
        return {
            "id": self.id,
            "title": self.title,
            "settings": copy.deepcopy(self.settings),
            "reason": self.reason,
            "sources": list(self.sources),
            "decision": self.decision,
        }

    def __repr__(self):
        return "Rule(%r)" % self.id


RULES = (
    # ------------------------------------------------------------------ GPU
    Rule(
        "gb10_identity",
        "GB10 is SM121, compute capability 12.1, one GPU per machine",
        {
            "gb10_compute_capability": "12.1",
            "gb10_sm": "121",
            "gpus_per_node": 1,
        },
        "SM121 is not datacenter Blackwell (SM100): no TMEM, WGMMA, DSMEM or NVSwitch, and most "
        "prebuilt kernels are compiled for sm_120/sm_120a only. Each Spark is one GPU, so every "
        "parallel size is counted in nodes.",
        (S003, S004, S000),
    ),
    Rule(
        "driver_branch",
        "NVIDIA driver: stay on branch 580, never 590",
        {
            "driver_branch": "580",
            "driver_forbidden_branches": ["590"],
            "driver_recommended_version": "580.142",
        },
        "Driver 590.x has a confirmed CUDAGraph deadlock on GB10; 580.142 is the known-good "
        "version for SM121.",
        (S003, S002),
        decision="002 runs driver 590 in production; 003 reports the CUDAGraph deadlock on 590 "
        "and this collection keeps CUDA graphs on (rule no_enforce_eager), so 003 wins: 590 is refused.",
    ),
    Rule(
        "driver_reboot_pending",
        "Loaded kernel module and user-space driver must be the same version",
        {"driver_versions_must_match": True},
        "After a driver package change the running kernel module (/proc/driver/nvidia/version) "
        "differs from the user-space library nvidia-smi uses until the machine reboots; "
        "CUDA then fails to initialise. Check before starting anything.",
        (S003,),
    ),
    Rule(
        "kernel_updates",
        "A kernel update must bring the NVIDIA module of the branch; known-bad kernels are refused",
        {
            "nvidia_kernel_module_package": "linux-modules-nvidia-{branch}-open-{kernel}",
            "nvidia_dkms_package": "nvidia-dkms-{branch}-open",
            "kernel_headers_package": "linux-headers-{kernel}",
            # whose version is the user space the module must match after an upgrade (libcuda, NVML)
            "nvidia_userspace_package": "libnvidia-compute-{branch}",
            # What moves as one on DGX OS (the unit): the driver's user space, the precompiled module's metapackage
            # (it depends on the matching nvidia-kernel-common-<branch>) and the kernel's metapackages of DGX OS's
            # flavour. The nvidia_driver role holds them together; only the OS update lifts those holds.
            "nvidia_userspace_packages": ["nvidia-driver-{branch}-open", "libnvidia-compute-{branch}",
                                          "nvidia-utils-{branch}"],
            "kernel_flavour": "nvidia-hwe-24.04",
            "nvidia_module_meta_package": "linux-modules-nvidia-{branch}-open-{flavour}",
            "kernel_meta_packages": ["linux-{flavour}", "linux-image-{flavour}", "linux-headers-{flavour}"],
            "known_bad_kernels": [
                {"release": "7.0.0-1019-nvidia",
                 "why": "NCCL fails at init with 'ibv_reg_mr_iova2 ... Cannot allocate memory' on every start "
                        "(CmaTotal 0 kB with CmaFree above it in /proc/meminfo), and Sparks wedged after "
                        "NV_ERR_NO_MEMORY right after the NCCL rendezvous; the same hosts served on "
                        "6.17.0-1032-nvidia with driver and NCCL unchanged",
                 "fix": "stay on a 6.17.0 kernel (boot the installed one, hold linux-image-nvidia), or boot "
                        "with kho=off where kexec_crash_size is 0",
                 "sources": [R_KERNEL_1019_NCCL, R_KERNEL_1019_CMA, R_KERNEL_1019_WEDGE]},
            ],
            "kernel_config_checks": [
                {"option": "CONFIG_KEXEC_HANDOVER_ENABLE_DEFAULT", "value": "y", "unless_cmdline": "kho=off",
                 "why": "Kexec HandOver on by default (the 7.0 kernels) leaves CmaTotal at 0 kB, and NCCL's "
                        "ibv_reg_mr over RoCE fails with ENOMEM at every start",
                 "fix": "add kho=off to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub and run update-grub "
                        "(where kexec_crash_size is 0), or stay on a 6.17.0 kernel",
                 "sources": [R_KERNEL_1019_CMA]},
            ],
        },
        "The NVIDIA kernel module is built for one kernel: DGX OS ships it per kernel as its own precompiled, "
        "signed package (linux-modules-nvidia-<branch>-open-<kernel>, through the metapackage of its kernel "
        "flavour, nvidia-hwe-24.04), and it depends on the matching nvidia-kernel-common-<branch>, so kernel, "
        "module and 580 user space move in one transaction. NVIDIA's DKMS driver (nvidia-dkms-<branch>-open) "
        "builds it from the kernel's headers instead, refused under Secure Boot unless enrolled, and is not what "
        "DGX OS installs: the nvidia_driver role installs the module metapackage and takes a host off DKMS in one "
        "transaction. An apt run outside the roll (unattended-upgrades, the Dashboard, a person's full-upgrade) "
        "can bring a new kernel while the module or the user space is phased or held back, and after the reboot "
        "the Spark has no GPU: so the role holds the whole unit, kernel metapackages included, and only the OS "
        "update lifts those holds, for its upgrade, and sets them again. An OS update proves the next boot's kernel has the module of "
        "the pinned branch, the version of the user space installed then (libnvidia-compute-<branch>: on DGX OS "
        "kernel, module and user space move in one transaction), before it reboots. Some kernels broke NCCL over "
        "RoCE on Sparks (field reports): an update refuses them by name, and a kernel built with Kexec HandOver "
        "on by default unless the boot turns it off, unless the inventory says why one is accepted.",
        (R_KERNEL_1019_NCCL, R_KERNEL_1019_CMA, R_KERNEL_1019_WEDGE),
    ),
    Rule(
        "secure_boot_modules",
        "Under Secure Boot the next kernel's NVIDIA module must be signed by a key the kernel trusts",
        {
            # The EFI global variable SecureBoot (GUID EFI_GLOBAL_VARIABLE_GUID) as efivarfs names its file: 4
            # attribute bytes, then the data byte (1: on).
            "secure_boot_efivar": "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
            # modinfo's signer (the CN of the certificate that signed the module) of the keys Ubuntu's kernels carry
            # built in (debian/canonical-certs.pem): a module signed by one loads under Secure Boot as it is.
            "module_trusted_signers": [
                {"signer": "Canonical Ltd. Kernel Module Signing",
                 "why": "the key Canonical signs the precompiled NVIDIA modules (linux-modules-nvidia-<branch>-open-"
                        "<kernel>, noble's restricted component) with; its certificate is built into Ubuntu's "
                        "kernels (valid 2016-05-31 to 2026-05-29)",
                 "sources": [P_UBUNTU_KERNEL_CERTS, P_KMOD_SIGNER]},
                {"signer": "Canonical Ltd. Kernel Module Signing 2025 Kmod",
                 "why": "its successor (valid from 2025-11-21), built into Ubuntu's kernels beside it",
                 "sources": [P_UBUNTU_KERNEL_CERTS, P_KMOD_SIGNER]},
            ],
            # The certificate DKMS signs the modules it builds with on Ubuntu (made by update-secureboot-policy
            # --new-key); the kernel trusts it only once enrolled as a MOK (mokutil --import, confirmed at the next
            # boot's MOK manager).
            "mok_certificate": "/var/lib/shim-signed/mok/MOK.der",
        },
        "With Secure Boot on, the kernel loads only modules signed by a key it trusts, and refuses the others; "
        "modinfo's version check does not see it, so the next boot's kernel would start without its GPU. The state "
        "is the EFI variable SecureBoot, read from efivarfs (4 attribute bytes, then 1 for on; absent, no Secure "
        "Boot). DGX OS's precompiled modules are signed by Canonical's kernel module key, built into the kernel; "
        "the DKMS driver's modules are signed with the machine's own MOK, which the kernel trusts only once it is "
        "enrolled (mokutil --test-key answers 'is already enrolled' or 'is not enrolled'; its exit status changed "
        "meaning after mokutil 0.7.2, so the words are read). An OS update refuses a reboot into a kernel whose "
        "module would be refused: unsigned, or signed by a key not enrolled.",
        (P_EFI_GLOBAL_GUID, P_EFIVARFS_LAYOUT, P_KERNEL_SB_STATE, P_KMOD_SIGNER, P_UBUNTU_KERNEL_CERTS,
         P_DKMS_UBUNTU_MOK, P_MOKUTIL_TEST_KEY),
    ),
    Rule(
        "unified_memory",
        "GPU memory is the unified system memory: size it from /proc/meminfo",
        {"gpu_memory_source": "meminfo"},
        "GB10 shares one LPDDR5X pool between CPU and GPU; nvidia-smi reports no separate GPU "
        "memory ('Not Supported') and CUDA sees roughly MemTotal (about 119-122 GB of 128 GB). "
        "002 also saw CUDA-visible memory capped near 62 GB with the nvidia modeset=0 kernel "
        "parameter, which is why its single-node Qwen3.6 ran at 0.55. So where the GPU gate has "
        "recorded what CUDA reports (torch.cuda.mem_get_info), memory is sized from that instead.",
        (S004, S001, S002),
    ),
    Rule(
        "decode_roofline",
        "Decode speed is bounded by memory bandwidth: 273 GB/s over the bytes each token reads",
        {
            "gb10_memory_bandwidth_gb_s": 273,
            "roofline_warn_share": 0.2,
        },
        "Each generated token reads every weight active for it once (for a MoE model only its active "
        "experts), and its context's KV cache: one stream on one node cannot decode faster than the "
        "memory bandwidth (273 GB/s on the GB10's LPDDR5X, datasheet) over those bytes. Tensor "
        "parallelism splits the bytes over its nodes; pipeline stages run one after another, so they do "
        "not. The published single-stream figures sit at about a third of this bound (Qwen3-235B-A22B "
        "GPTQ-Int4 on two Sparks: 17.0 of ~47 tok/s); below a fifth, something costs more than it "
        "should (CUDA graphs off lose ~55%, NCCL over sockets, a wrong kernel path), so the benchmark "
        "warns.",
        (S001, S000, S003),
    ),
    Rule(
        "published_figures",
        "Published decode figures on DGX Spark, beside which the benchmark reports",
        {
            "published_figures": [
                {"model": "Qwen/Qwen3-235B-A22B-GPTQ-Int4", "checkpoint_format": "gptq", "params_b": 235,
                 "active_params_b": 22, "tensor_parallel_size": 2, "nodes": 2,
                 "output_tok_s": {"1": 17.0, "2": 24.1, "4": 36.4},
                 "setup": "vLLM 0.19.0, Ray over RoCE, TRITON_ATTN, gptq_marlin, fp8 KV cache, "
                          "gpu-memory-utilization 0.87, 256 completion tokens per request",
                 "source": S000},
                {"model": "openai/gpt-oss-120b", "checkpoint_format": "mxfp4", "active_params_b": 5.1,
                 "tensor_parallel_size": 1, "nodes": 1,
                 "output_tok_s": {"1": [32.0, 60.0]}, "setup": "one Spark, the model table's expected range",
                 "source": S000},
            ],
        },
        "What Spark owners measured, with the setup, so a fleet's own figures can be read against them: "
        "output tokens per second summed over the concurrent requests, by concurrency (a range where the "
        "source gives one). A figure is compared where the model and its tensor parallel size match.",
        (S000,),
    ),
    # ------------------------------------------------------------- kernels
    Rule(
        "attention_backend",
        "Attention backend TRITON_ATTN, never FlashInfer",
        {
            "vllm_attention_backend": "TRITON_ATTN",
            "vllm_forbidden_attention_backends": ["FLASHINFER"],
        },
        "FlashInfer has accuracy bugs with FP8 models on Blackwell and its MoE backends are not "
        "available on SM121; Gemma4's mixed head sizes (256/512) are not supported by FlashInfer.",
        (S003, S002, S000),
    ),
    Rule(
        "moe_backend",
        "MoE kernels: Marlin for quantized weights, Triton for BF16; never CUTLASS or FlashInfer",
        {
            "vllm_moe_backend": "marlin",
            "vllm_forbidden_moe_backends": ["cutlass", "flashinfer_cutlass", "flashinfer_trtllm", "flashinfer_cutedsl"],
            # The weight kind whose MoE backend table (vLLM's fused_moe oracle) reads --moe-backend, by
            # the --quantization loader ("none": no loader, BF16 weights). gptq_marlin and awq_marlin run
            # their own Marlin MoE method and never read the flag.
            "moe_kernel_by_loader": {"none": "unquantized", "fp8": "fp8", "compressed-tensors": "nvfp4",
                                     "mxfp4": "mxfp4", "gptq_marlin": None, "awq_marlin": None},
            # Where a weight kind takes another backend than vllm_moe_backend.
            "vllm_moe_backend_by_kernel": {"unquantized": "triton"},
        },
        "CUTLASS FP4 MoE is broken on SM121 and silently produces garbage; Marlin is stable "
        "and fast for GPTQ-Int4, mxfp4, FP8 and NVFP4 weights. Marlin is a kernel for quantized "
        "weights: for unquantized (BF16) experts vLLM 0.23.0 accepts only triton, flashinfer_trtllm, "
        "flashinfer_cutlass and aiter and raises ValueError at model build for marlin; FlashInfer "
        "is forbidden here and aiter is ROCm's, so BF16 MoE runs Triton's fused MoE.",
        (S003, S000),
        decision="003 says --moe-backend=marlin for MoE models; its models were quantized (GPTQ, "
        "mxfp4, NVFP4, FP8). 000 lists Qwen3-30B-A3B in BF16 as a working single-Spark option, which "
        "the pinned release refuses with marlin (fused_moe/oracle/unquantized.py), so BF16 experts "
        "take triton. The accepted backends per weight kind are read from the release "
        "(plugins/module_utils/vllm_release.py) and checked by preflight.",
    ),
    Rule(
        "flashinfer_moe_fp4_off",
        "No FlashInfer FP4 MoE: --moe-backend decides, VLLM_USE_FLASHINFER_MOE_FP4 never 1",
        {
            "vllm_use_flashinfer_moe_fp4": "0",
            "vllm_env_dropped": ["VLLM_FLASHINFER_MOE_BACKEND", "VLLM_USE_V1"],
        },
        "FlashInfer's FP4 MoE takes the CUTLASS FP4 path that is broken on SM121. vLLM 0.23.0 reads "
        "VLLM_USE_FLASHINFER_MOE_FP4 only when --moe-backend is auto, and warns that it is deprecated whenever it is "
        "set; every unit passes --moe-backend (rule moe_backend), so the variable is not emitted, and an override "
        "that sets it to anything but 0 is refused.",
        (S003, S002),
        decision="003 sets VLLM_USE_FLASHINFER_MOE_FP4=0, which vLLM 0.19.0 read; 0.23.0 replaces it with "
        "--moe-backend (vllm/envs.py deprecates it). 002 sets VLLM_FLASHINFER_MOE_BACKEND=latency and "
        "VLLM_USE_V1=1; FlashInfer MoE is unavailable on SM121 (003) and V1 is the only engine, so neither is emitted.",
    ),
    Rule(
        "marlin_atomic_add",
        "VLLM_MARLIN_USE_ATOMIC_ADD=1",
        {"vllm_marlin_use_atomic_add": "1"},
        "The Marlin kernel has a race condition on SM121 that gives wrong outputs without atomic adds.",
        (S003,),
    ),
    Rule(
        "no_enforce_eager",
        "Never --enforce-eager (CUDA graphs stay on)",
        {"vllm_forbidden_flags": ["--enforce-eager"]},
        "Disabling CUDA graphs costs about 55% throughput on SM121 (~59 to ~26 tok/s). A startup "
        "problem it papers over must be fixed instead. A model entry may only turn it on with an "
        "explicit written reason (allow_enforce_eager_reason).",
        (S003, S004),
        decision="004 launches every model with --enforce-eager without a measured reason; 003 "
        "measured the 55% loss on the same hardware, so 003 wins.",
    ),
    Rule(
        "no_fastsafetensors",
        "--load-format fastsafetensors: forbidden in NGC images, allowed in the virtualenv",
        {"vllm_forbidden_load_formats": []},
        "003 forbids it for an ImportError in the NGC 26.03/26.04 images. vLLM 0.23.0 requires "
        "fastsafetensors>=0.3.2 itself, so the virtualenv has it and nothing is forbidden; the list stays for a "
        "loader a later release breaks.",
        (S003,),
        decision="003's reason is the container's missing package, which a pip install of the pinned release "
        "cannot have (rule verdict: obsolete).",
    ),
    Rule(
        "quantization_loader",
        "Quantization loader follows the checkpoint format",
        {
            "quantization_by_checkpoint_format": {
                "gptq": "gptq_marlin",
                "awq": "awq_marlin",
                "fp8": "fp8",
                "nvfp4": "compressed-tensors",
                "mxfp4": "mxfp4",
                "bf16": None,
            },
            "quantization_runtime_from_bf16": ["fp8"],
            "mxfp4_model_families": ["gpt-oss"],
        },
        "The mxfp4 loader only reads gpt-oss pre-quantized checkpoints (3D uint8 expert tensors); "
        "standard HF checkpoints fail with an IndexError. GPTQ-Int4 loads with gptq_marlin, FP8 "
        "with fp8, NVFP4 (compressed-tensors format) with compressed-tensors; a BF16 checkpoint may "
        "be quantized to FP8 at load time (Gemma4). There is no online BF16 to mxfp4 path. AWQ "
        "INT4 runs through Marlin as well.",
        (S003, S002, S000, S001),
    ),
    Rule(
        "known_answers",
        "Verify asks known answers and the same greedy prompt twice: an HTTP 200 is not a right answer",
        {
            # Short prompts whose greedy continuation names one word; an answer is right when it holds one of
            # the accepted words as a whole word, in any case.
            "known_answers": [
                {"prompt": "The capital of France is", "expect": ["Paris"]},
                {"prompt": "The chemical symbol for gold is", "expect": ["Au"]},
                {"prompt": "The opposite of hot is", "expect": ["cold"]},
            ],
            "known_answers_min_correct": 2,
            "known_answers_max_tokens": 16,
            # Fewer tokens than one KV block (16 on the GPU, 128 on vLLM's CPU build): the second ask cannot be
            # served from the prefix cache, so both asks run the same kernels on the same shapes.
            "determinism_prompt": "One two three",
            "determinism_max_tokens": 8,
        },
        "A MoE model whose experts run through the CUTLASS FP4 kernels on SM121 keeps answering: status 200, "
        "completion tokens, readable sentences, and the wrong words. A served model that knows anything "
        "completes each of these prompts with the accepted word; one odd phrasing is forgiven (two of three), "
        "garbage misses them all. Greedy decoding (temperature 0) of one prompt on an idle endpoint repeats "
        "itself token for token; a kernel with a race (Marlin without atomic adds) does not. An entry whose "
        "model cannot know the answers (random test weights) turns the known answers off with a written "
        "reason (correctness_check: false, correctness_check_off_reason); the determinism ask still runs.",
        (S003, S000),
    ),
    Rule(
        "kv_cache_dtype",
        "KV cache in FP8; no NVFP4 KV cache",
        {
            "kv_cache_dtype_default": "fp8",
            "kv_cache_dtype_allowed": ["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"],
        },
        "Every configuration that ran on GB10 used an FP8 KV cache; NVFP4 KV cache is not "
        "supported on SM12x.",
        (S000, S002, S001),
    ),
    Rule(
        "reasoning_max_tokens",
        "max_tokens >= 512 for reasoning models",
        {"reasoning_min_max_tokens": 512, "reasoning_tool_min_max_tokens": 1024},
        "Chain-of-thought tokens are spent from max_tokens first; below 512 a reasoning model "
        "returns content: null. Use 1024 or more for tool calling.",
        (S003,),
    ),
    Rule(
        "mamba_prefix_caching",
        "Prefix caching on Mamba/hybrid models needs max-num-batched-tokens >= 2128",
        {"mamba_align_block_size": 2128, "mamba_max_num_batched_tokens": 8192},
        "With prefix caching vLLM puts Mamba layers in cache-align mode with block_size 2128, "
        "above the default max_num_batched_tokens of 2048, and the engine asserts at start. "
        "8192 is what ran.",
        (S002,),
    ),
    Rule(
        "speculative_mtp",
        "Speculative decoding uses method mtp, never draft_model",
        {"speculative_method": "mtp", "speculative_forbidden_methods": ["draft_model"]},
        "draft_model runs a full model as drafter; mtp uses the light MTP head (or a matched "
        "drafter model such as Gemma4's -assistant): +40% generation throughput.",
        (S002,),
    ),
    Rule(
        "gpu_memory_utilization",
        "gpu-memory-utilization: never above 0.90, 0.85-0.87 is safe",
        {
            "gpu_memory_utilization_ceiling": 0.90,
            "gpu_memory_utilization_safe_min": 0.85,
            "gpu_memory_utilization_safe_max": 0.87,
        },
        "The page cache competes with CUDA for the unified pool; too high gives OOM or Xid 43 "
        "channel preemption under load.",
        (S003, S000),
    ),
    Rule(
        "long_context_multinode_utilization",
        "0.82 for long-context (131K) multi-node serving",
        {"gpu_memory_utilization_long_context": 0.82, "long_context_threshold_tokens": 131072},
        "At 131K context with large KV caches the two-node cluster needed 0.82 to stop Xid 43 errors.",
        (S003,),
    ),
    Rule(
        "drop_page_cache",
        "Drop the page cache before vLLM starts",
        {"drop_caches_command": "sync; echo 3 > /proc/sys/vm/drop_caches"},
        "A fragmented page cache on the unified pool makes model load OOM. Every process that "
        "loads weights drops it first: the vLLM units, and the Ray head and worker units, under "
        "which the ray executor's GPU workers load their share (on a follower, right after the "
        "model store wrote the weights there). The members of a multi-node model drop it again "
        "before every start of its head (rule members_drop_page_cache).",
        (S003, S002),
    ),
    Rule(
        "members_drop_page_cache",
        "Every member of a multi-node model drops its page cache before each start of the head, and the head waits",
        {"page_cache_drop_timeout_sec": 600},
        "A follower loads its share again at every start of the model, and with the ray executor it "
        "loads inside a Ray worker that may have run for days, its page cache full: its own unit's "
        "drop ran only when Ray started. In 002 a start whose drop silently failed OOMed during the "
        "load, and 003's fix for an OOM at startup is to drop before restarting. So the head's vLLM unit asks each member over the fabric, in "
        "ExecStartPre, to drop its page cache, and waits for every answer before vLLM starts: "
        "systemd's restart, the retry timer, a rolling update, os_update and a person all start "
        "the unit, so none can skip it, and no placement group (ray) or rendezvous (mp) exists "
        "before ExecStart, so nothing loads before the drops are done and no Ray worker is "
        "restarted. This many seconds bound the whole ExecStartPre phase (the unit's "
        "TimeoutStartSec: for a Type=simple unit systemd's start timeout covers ExecStartPre and "
        "nothing after the process starts); a member that does not answer fails the start, which "
        "systemd retries like any other.",
        (S002, S003),
        decision="The seeds drop in each service's own ExecStartPre, one host per service. A member "
        "of a multi-node model has no service of its own under the ray executor, so the drop is "
        "asked for by the head's start rather than triggered by a member seeing a new placement "
        "group: that would race the group's workers, which start loading as soon as it forms.",
    ),
    Rule(
        "privileged_exec_start_pre",
        "Page-cache drop runs as root in ExecStartPre",
        {"exec_start_pre_privileged_prefix": "+"},
        "The service runs unprivileged but writing drop_caches needs root; without privilege the "
        "step fails silently and the model OOMs at load.",
        (S002,),
        decision="002 uses PermissionsStartOnly=true, which systemd deprecates; the '+' prefix on "
        "the ExecStartPre line gives that one command full privileges with the same effect.",
    ),
    Rule(
        "vllm_start_timeout",
        "Allow 30 minutes for vLLM to start",
        {"vllm_start_timeout_sec": 1800},
        "Loading 39 shards took about 13 minutes and a two-node start to first inference about "
        "15 minutes (Ray init, weight load, compile); 002's 900 s TimeoutStartSec has no margin. "
        "The roles wait this long for /health and a real completion (vllm_service's readiness gate, "
        "the followers' head watch): a Type=simple unit is started once its process runs, so "
        "TimeoutStartSec cannot bound the load; it bounds the page-cache drops before it (rule "
        "members_drop_page_cache).",
        (S004, S000, S002),
    ),
    Rule(
        "prefix_cache_metrics",
        "Prefix-cache hit rate from the raw counters",
        {"prefix_cache_hit_metrics": ["vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"]},
        "vLLM 0.23 has no gpu_prefix_cache_hit_rate gauge; hit rate = hits / queries.",
        (S003,),
    ),
    Rule(
        "nvidia_device_nodes",
        "NVIDIA device nodes exist before any sandboxed GPU unit starts",
        {
            "nvidia_devices_unit": "sparkfleet-nvidia-devices",
            # nvidia-modprobe: the nvidia module with /dev/nvidiactl and /dev/nvidia0 (-c 0), then
            # nvidia-uvm with /dev/nvidia-uvm (-u -c 0) and /dev/nvidia-uvm-tools (-u -c 1).
            "nvidia_modprobe_argv": [["-c", "0"], ["-u", "-c", "0"], ["-u", "-c", "1"]],
            "nvidia_device_nodes": ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"],
        },
        "The units run with DevicePolicy=closed; systemd resolves DeviceAllow=char-<group> against "
        "/proc/devices when the unit starts, before ExecStartPre runs. After a boot nvidia-uvm is "
        "normally loaded on first CUDA use by the setuid nvidia-modprobe, which a sandboxed unit "
        "cannot run: CUDA then fails inside the unit. A oneshot unit, ordered before every GPU "
        "unit, runs nvidia-modprobe (module and device nodes of GPU 0 and of UVM) as root first.",
        (S003, S004),
    ),
    # ------------------------------------------------------------ containers
    Rule(
        "host_networking",
        "Containers use host networking",
        {
            "container_network_mode": "host",
            "container_run_flags": ["--gpus", "all", "--ipc=host", "--ulimit", "memlock=-1",
                                    "--ulimit", "stack=%d" % _STACK_BYTES],
            "service_memlock_limit": "infinity",
        },
        "Bridge networking blocks NCCL rendezvous; shared IPC and unlimited memlock are what ran. The "
        "systemd units of vLLM and of the Ray head and workers (the ray executor's GPU workers run under "
        "them) get the same unlimited locked memory: NCCL registers its buffers with the RDMA device, and "
        "systemd's default of 8 MiB is too little.",
        (S003, S002),
    ),
    Rule(
        "service_stack_limit",
        "The services run with the containers' 64 MiB stack limit",
        {"service_stack_limit": _STACK_BYTES},
        "Both of 002's vLLM services ran in containers started with --ulimit stack=67108864 (64 MiB, soft "
        "and hard), not with systemd's default (the kernel's 8 MiB soft limit). The collection runs vLLM "
        "and Ray as systemd units, so LimitSTACK= gives the vLLM units and the Ray head and worker units "
        "(the ray executor's GPU workers run under them) the same limit: what ran is what the units get.",
        (S002,),
    ),
    Rule(
        "triton_ptxas",
        "Point Triton at the CUDA ptxas",
        {
            "triton_ptxas_source": "/usr/local/cuda/bin/ptxas",
            "triton_ptxas_link": "triton/backends/nvidia/bin/ptxas",
            "triton_ptxas_env": {"TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"},
        },
        "Triton looks for ptxas under its own backends/nvidia/bin, which the install lacks; JIT "
        "compilation fails at the first request. Link it (path relative to site-packages) and "
        "set TRITON_PTXAS_PATH.",
        (S003,),
    ),
    # --------------------------------------------------------------- versions
    Rule(
        "version_pins",
        "Identical vLLM/Triton/Transformers/Python on every node",
        {
            "vllm_version": "0.23.0",
            "triton_version": "3.6.0",
            "transformers_version": "4.57.6",
            "python_version": "3.12",
            "python_dev_package": "python3.12-dev",
            "ray_version": "2.60.0",
        },
        "Ray workers load models in their own environment: a missing or different package gives "
        "import errors or wrong architectures on the worker.",
        (S004, S003, S000),
        decision="004 pins vllm 0.18.1 with triton 3.6.0 and transformers 4.57.6; 003 and 000 ran and measured "
        "every SM121 rule on vLLM 0.19.0 in NVIDIA's container. The virtualenv runs vLLM 0.23.0, chosen by its "
        "aarch64 wheels (rule torch_cuda_build): it requires torch 2.11.0, whose Triton is 3.6.0, and accepts "
        "transformers 4.57.6 (>=4.56, not 5.0-5.5.0), so 004's Triton and Transformers pins stay; every SM121 rule "
        "is re-checked against its files (VERDICTS). No document pins Ray; 2.60.0 is pinned because it has token "
        "authentication (RAY_AUTH_MODE=token), which the ray role turns on, and it is the version the cluster "
        "scenario runs.",
    ),
    Rule(
        "torch_cuda_build",
        "torch from PyPI: on aarch64 its wheel is the CUDA 13 build, the CUDA major of DGX OS",
        {
            "torch_version": "2.11.0",
            "torch_cuda_major": 13,
        },
        "vLLM 0.23.0 requires torch==2.11.0, and PyPI's aarch64 wheel of torch 2.11.0 is a CUDA 13 build: its "
        "CUDA requirements (cuda-toolkit 13.0.2, nvidia-nccl-cu13, cuDNN for CUDA 13) carry no x86-64 marker, and "
        "vLLM's aarch64 extensions need libcudart.so.13. DGX OS is CUDA 13.0 too: the nvcc that builds NCCL, the "
        "ptxas Triton uses and the preloaded NCCL share the CUDA major of torch. So a Spark installs from PyPI "
        "alone, with no extra index and no local-version pin, from a lock of the whole aarch64 set with hashes "
        "(roles/vllm_venv/files); the GPU gate refuses a torch whose CUDA major is not 13 or differs from the "
        "CUDA that built the NCCL it preloads.",
        (S004, S003),
        decision="No source document names where torch comes from; 004 says some binary distributions do not "
        "apply on aarch64, and 003 and 000 ran vLLM 0.19.0 inside NVIDIA's container. Chosen by the wheels "
        "themselves (pip's resolver for linux aarch64 / CPython 3.12 against PyPI, and the ELF and fatbin contents "
        "of the downloaded aarch64 wheels: tests/contract/test_platform.py, test_stack_wheels.py). vLLM 0.23.0: "
        "torch 2.11.0 from PyPI is CUDA 13, and its Marlin kernels (MoE and GPTQ/AWQ, rule moe_backend) carry sm_120 "
        "SASS, 19 of 20 fatbin containers in _moe_C. Rejected: 0.19.0 with torch 2.10.0+cu129 from PyTorch's index "
        "(its aarch64 wheel needs libcudart.so.12, a CUDA 12 virtualenv on a CUDA 13 host, and PyTorch dropped its "
        "CUDA 12.9 aarch64 build; PyPI's aarch64 torch 2.10.0 is a CPU build); 0.20.x (CUDA 13 from PyPI too, but "
        "15 of 20 Marlin MoE containers are PTX only on 12.1: the driver's JIT, which vllm#40923 saw answer wrongly "
        "on GB10); 0.26 and later (they require transformers>=5.5.3, against 004's pin). 0.24 and 0.25 are the next "
        "candidates, to be proven the same way.",
    ),
    Rule(
        "cutlass_fp8_patch",
        "Patch vLLM's CUTLASS FP8 detection off (functions and module constants)",
        {
            "cutlass_fp8_patch": {
                "file": "vllm/model_executor/layers/quantization/utils/w8a8_utils.py",
                "functions": ["cutlass_fp8_supported", "cutlass_block_fp8_supported"],
                "constants": ["CUTLASS_FP8_SUPPORTED", "CUTLASS_BLOCK_FP8_SUPPORTED"],
                "value": False,
            },
        },
        "vLLM's prebuilt CUTLASS FP8 kernels cover sm_120/sm_120a, not sm_121: cutlass_scaled_mm "
        "raises 'Error Internal'. Returning False falls back to Triton FP8 kernels that JIT for "
        "sm_121. Callers use both the functions and the module constants, so patch both. In vLLM "
        "0.23.0 cutlass_fp8_supported() decides per-token against per-tensor activation scales (fp8.py) and "
        "CUTLASS_BLOCK_FP8_SUPPORTED whether CutlassFp8BlockScaledMMKernel calls itself supported; the kernel "
        "selection itself reads neither, which rule cutlass_fp8_disabled_kernels covers.",
        (S004,),
    ),
    Rule(
        "cutlass_fp8_disabled_kernels",
        "Turn vLLM's CUTLASS and FlashInfer FP8/INT8 linear kernels off by name (VLLM_DISABLED_KERNELS)",
        {
            "vllm_disabled_kernels": ["CutlassFP8ScaledMMLinearKernel", "FlashInferFP8ScaledMMLinearKernel",
                                      "CutlassInt8ScaledMMLinearKernel", "CutlassFp8BlockScaledMMKernel"],
        },
        "vLLM 0.23.0 picks FP8, block-FP8 and INT8 linear kernels from _POSSIBLE_FP8_KERNELS, "
        "_POSSIBLE_FP8_BLOCK_KERNELS and _POSSIBLE_INT8_KERNELS (vllm/model_executor/kernels/linear/__init__.py), "
        "whose CUDA kernels CutlassFP8ScaledMMLinearKernel and CutlassInt8ScaledMMLinearKernel call themselves "
        "supported on any CUDA device and run the prebuilt cutlass_scaled_mm ('Error Internal' on sm_121 in 004's "
        "build; no sm_12x INT8 kernel). That selection reads no cutlass_fp8_supported(), so the patch does not "
        "reach it; it skips every class named in VLLM_DISABLED_KERNELS (vllm/envs.py splits it on commas, no "
        "spaces). With these off an FP8 layer takes PerTensorTorchFP8ScaledMMLinearKernel or "
        "ChannelWiseTorchFP8ScaledMMLinearKernel (torch._scaled_mm, cuBLASLt), a block-FP8 layer "
        "TritonFp8BlockScaledMMKernel and an INT8 layer TritonInt8ScaledMMLinearKernel (Triton, JIT for sm_121). "
        "Every vLLM and Ray unit gets it; both ray executors pass VLLM_* to their workers.",
        (S004, S003),
        decision="004 names only the w8a8_utils checks; they still steer the activation scales and the "
        "block-FP8 CUTLASS kernel, so rule cutlass_fp8_patch stays, and this rule covers the selection that does "
        "not read them (CutlassFp8BlockScaledMMKernel is named too, so a patch that stops applying cannot bring "
        "it back). FlashInferFP8ScaledMMLinearKernel is off too: the release requires flashinfer-python, the "
        "kernel claims capability 100 and up, its bmm_fp8 'auto' puts FlashInfer's own CUTLASS sm12x GEMM first "
        "on SM120/121, and 003 reports FlashInfer accuracy bugs with FP8 models on Blackwell. 0.23.0's sm_12x "
        "CUTLASS images are sm_120f, which GB10 can load (tests/contract/test_stack_wheels.py); whether they now "
        "answer right on 12.1 is unmeasured, so they stay off.",
    ),
    Rule(
        "nccl_sm121",
        "NCCL v2.28.9 built for sm_121, loaded first",
        {
            "nccl_version": "2.28.9",
            "nccl_git_tag": "v2.28.9-1",
            "nccl_git_url": "https://github.com/NVIDIA/nccl.git",
            "nccl_nvcc_gencode": "-gencode=arch=compute_121,code=sm_121",
            "nccl_required_sass": "sm_121",
            "nccl_load_first": True,
        },
        "Prebuilt NCCL (pip 2.28.9, deb 2.29.3) has no sm_121 kernels: collectives fail with "
        "truncated messages. Build from source for sm_121 and put it first in LD_LIBRARY_PATH on "
        "every node.",
        (S004,),
    ),
    Rule(
        "nccl_preload",
        "The built NCCL is preloaded (LD_PRELOAD) into every unit that runs a GPU process",
        {
            "nccl_preload_env": "LD_PRELOAD",
            "nccl_entry_points": ["ncclGetVersion", "ncclCommInitRankConfig", "ncclAllReduce",
                                  "ncclAllGather", "ncclReduceScatter", "ncclBroadcast", "ncclSend",
                                  "ncclRecv", "ncclCommDestroy"],
        },
        "A CUDA torch's libtorch_cuda.so needs libnccl.so.2 through a DT_RPATH "
        "($ORIGIN/../../nvidia/nccl/lib), which the loader searches before LD_LIBRARY_PATH: with "
        "only LD_LIBRARY_PATH every collective torch makes itself runs on the pip NCCL, which has "
        "no sm_121 kernels. A preloaded library comes first in the global scope, so the entry "
        "points torch binds to resolve to the built one (checked by address, with dladdr, by the "
        "GPU gate). vLLM's own pynccl keeps loading VLLM_NCCL_SO_PATH.",
        (S004,),
        decision="004 says to put the built library first in LD_LIBRARY_PATH; measured on a lent "
        "2xH200 machine (torch 2.11.0+cu130, NCCL v2.28.9-1 from source) that leaves torch on the pip "
        "library, while LD_PRELOAD makes ncclAllReduce and ncclCommInitRankConfig resolve to the "
        "built one. Both are set: LD_LIBRARY_PATH for programs that link NCCL by name.",
    ),
    # ----------------------------------------------------------------- fabric
    Rule(
        "fabric_mtu",
        "MTU 9000 on the QSFP interfaces, proven with an 8972-byte DF ping",
        {"fabric_mtu": 9000, "jumbo_ping_payload": 8972},
        "MTU 1500 fragments 200GbE transfers; 8972 = 9000 - 20 (IPv4) - 8 (ICMP) with "
        "don't-fragment proves the path end to end.",
        (S004,),
    ),
    Rule(
        "qsfp_both_halves",
        "Use both halves of the QSFP port",
        {
            "qsfp_netdev_pattern": r"^enP?\d*p\d+s0f[01]np[01]$",
            "roce_device_pattern": r"^roceP?\d*p\d+s0f[01]$",
            "qsfp_halves_per_port": 2,
            "qsfp_link_prefixes": ["enp1", "enP2p1"],
        },
        "The ConnectX-7 hangs off two PCIe Gen5 x4 links; each QSFP port shows up as two "
        "netdevs/RoCE devices (enp1s0f1np1/rocep1s0f1 and enP2p1s0f1np1/roceP2p1s0f1). Only "
        "both halves together reach ~200 Gb/s.",
        (S001, S003),
    ),
    Rule(
        "nccl_ib_hca",
        "Pin NCCL_IB_HCA to the active RoCE devices of the cabled port",
        {"nccl_pin_ib_hca": True},
        "Without pinning, NCCL on SM121 can deadlock silently.",
        (S003,),
    ),
    Rule(
        "nccl_ib_transport",
        "NCCL over RoCE v2",
        {
            "nccl_ib_disable": "0",
            "nccl_net_plugin": "none",
            "nccl_ib_roce_version_num": "2",
            "nccl_ib_timeout": "22",
        },
        "IB verbs transport over RoCE v2 reaches ~24 GB/s; NCCL_NET_PLUGIN=none stops an "
        "external plugin from falling back to TCP.",
        (S003, S001),
        decision="004 sets NCCL_IB_DISABLE=1 (socket transport); 001 measured sockets at ~2 GB/s "
        "against ~24 GB/s for RoCE and 003 runs NCCL_IB_DISABLE=0, so RoCE wins.",
    ),
    Rule(
        "nccl_gid_index",
        "NCCL_IB_GID_INDEX computed from the GID table (RoCE v2 + IPv4)",
        {"nccl_gid_type": "RoCE v2", "nccl_gid_family": "ipv4"},
        "003 used index 3 and says to verify it on the hardware: the index is read from "
        "/sys/class/infiniband/<dev>/ports/1/gid_attrs, never guessed.",
        (S003,),
    ),
    Rule(
        "nccl_conf_ib_disable",
        "Remove NCCL_IB_DISABLE=1 from /etc/nccl.conf",
        {"nccl_conf_path": "/etc/nccl.conf", "nccl_conf_forbidden": ["NCCL_IB_DISABLE=1"]},
        "DGX OS ships /etc/nccl.conf with NCCL_IB_DISABLE=1, which forces socket transport "
        "(~2 GB/s) whatever the environment says in processes that do not override it.",
        (S001, S004),
        decision="004 keeps and even exports NCCL_IB_DISABLE=1; see nccl_ib_transport.",
    ),
    Rule(
        "gpudirect_rdma",
        "No GPUDirect RDMA on GB10",
        {"gpudirect_rdma_supported": False, "nccl_net_gdr_level": "LOC"},
        "There is no discrete GPU memory behind a PCIe BAR, so nvidia-peermem cannot load; RDMA "
        "goes through host-allocated buffers (~22 GB/s over C2C). LOC tells NCCL never to try "
        "GPUDirect.",
        (S001, S004),
        decision="004 sets NCCL_NET_GDR_LEVEL=SYS, which asks NCCL to attempt GPUDirect on every "
        "path; 001 shows it is architecturally impossible, so LOC states the truth.",
    ),
    Rule(
        "nccl_p2p",
        "NCCL_P2P_DISABLE=1",
        {"nccl_p2p_disable": "1"},
        "One GPU per machine: there is no peer GPU in the box to talk to.",
        (S004,),
    ),
    Rule(
        "fabric_interface_env",
        "NCCL, UCX and Gloo sockets on the fabric interface",
        {"fabric_ifname_env_vars": ["NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES", "GLOO_SOCKET_IFNAME"]},
        "Otherwise NCCL bootstrap, UCX and Ray's Gloo rendezvous pick whatever the routing table "
        "prefers (the LAN) and time out or crawl. The name is the cabled half (004 used "
        "enp1s0f0np0, 003 enp1s0f1np1), so it comes from inventory and facts.",
        (S003, S004, S001),
    ),
    Rule(
        "vllm_host_ip",
        "VLLM_HOST_IP and Ray's node IP are the node's own fabric address",
        {"vllm_host_ip_source": "fabric_address"},
        "With LAN and QSFP addresses vLLM's get_ip() and Ray disagree: 'Expected 2 unique IPs but got 3' "
        "(vLLM's RayDistributedExecutor). vLLM 0.23.0's default ray executor (RayExecutorV2) takes the workers' "
        "addresses from Ray's placement group, which is the fabric address only when Ray's node IP is; get_ip() "
        "still reads VLLM_HOST_IP for every other socket.",
        (S004,),
    ),
    Rule(
        "ray_memory_monitor",
        "Ray memory monitor off",
        {"ray_memory_monitor_refresh_ms": 0, "ray_memory_usage_threshold": 1.0},
        "On unified memory Ray counts GPU-resident weights as host memory and kills healthy "
        "workers after load (115.65GB / 121.69GB > 0.95). refresh 0 disables the monitor; "
        "threshold 1.0 disables the OOM killer if it is ever re-enabled.",
        (S003, S004),
    ),
    Rule(
        "memory_guard",
        "earlyoom kills vLLM or Ray before unified memory runs out; sshd never",
        {
            "memory_guard_program": "earlyoom",
            "memory_guard_term_percent": 4,
            "memory_guard_kill_percent": 2,
            "memory_guard_swap_percent": 100,
            "memory_guard_prefer": "^(VLLM::|vllm$|ray::RayWorker)",
            "memory_guard_avoid": "^(sshd|sshd-session|systemd|systemd-.+|dbus-daemon|dbus-broker|NetworkManager|"
                                  "agetty|earlyoom|prometheus-node)$",
        },
        "On unified memory gpu-memory-utilization does not bound host memory: a Spark whose vLLM outgrew it "
        "(startup profiling at 0.70, a 131K prefill at 0.80) lost SSH and needed a power cycle instead of the "
        "kernel killing vLLM. A userspace guard acts first: earlyoom (Ubuntu universe, Debian main), which "
        "reads MemAvailable (which on GB10 counts CUDA's allocations: rule unified_memory sizes GPU memory "
        "from /proc/meminfo) and needs neither swap nor cgroup v2. It sends SIGTERM at term_percent and SIGKILL at "
        "kill_percent of MemTotal, both below the 10% the "
        "gpu_memory_utilization ceiling leaves, so a service at the ceiling is never killed; swap_percent 100 "
        "makes memory alone decide (thrashing swap is the freeze). It prefers (+300) vLLM's processes (vllm, "
        "VLLM::EngineCore, VLLM::Worker_TP*) and the ray executor's GPU workers (ray::RayWorkerWrapper), "
        "whose GPU memory is not in their oom_score (not Ray's agents: killing them frees nothing), and avoids "
        "(-300) sshd, systemd, dbus and itself: with the kernel's oom_score (666 + the "
        "process's share for oom_score_adj 0) an avoided process loses to every other one unless it holds "
        "nearly half the memory. systemd restarts the killed unit (vLLM Restart=always).",
        (R_UMA_HOST_WEDGE, R_UMA_HARD_RESET, S003),
        decision="systemd-oomd, the other guard Ubuntu ships, kills only units that opt in (ManagedOOM*=kill) "
        "and needs the unified cgroup hierarchy and per-cgroup PSI; earlyoom is chosen because it guards every "
        "process by name, reads the same MemAvailable the alerts read, and is proven in the simulated fleet "
        "(make chaos FAULTS=memory-pressure) where the cgroup hierarchy is hybrid and systemd-oomd cannot start.",
    ),
    Rule(
        "parallelism_across_nodes",
        "Tensor parallel across two nodes, pipeline parallel beyond",
        {"tensor_parallel_max_nodes": 2},
        "Two Sparks over one direct cable ran TP=2 (Qwen3-235B, Qwen3.5-122B). Over 200GbE "
        "pipeline parallel is the recommended split between nodes: with three or more nodes use "
        "--pipeline-parallel-size N --tensor-parallel-size 1.",
        (S001, S000, S004),
    ),
    Rule(
        "nccl_bandwidth_floor",
        "NCCL bus bandwidth must prove RoCE (verify floor 15 GB/s)",
        {
            "nccl_bus_bandwidth_floor_gbps": 15.0,
            "nccl_bus_bandwidth_roce_gbps": 24.0,
            "nccl_bus_bandwidth_socket_gbps": 2.0,
        },
        "RoCE all_reduce reaches ~24 GB/s (~22 GB/s through host buffers), socket fallback ~2 GB/s; "
        "a floor of 15 GB/s cannot be met by sockets and leaves margin under RoCE.",
        (S001,),
    ),
)

# Every SM121 rule that vLLM's own code decides, re-checked against the files of the release the virtualenv pins
# (VERDICT_RELEASE, which must be vllm_version: a bump without a re-check fails tests/unit): (verdict, evidence).
# needed: the release still behaves so and the rule takes effect there; replaced: the release reads another switch,
# which the rule now uses; obsolete: the release removed the cause, so the rule no longer restricts anything.
# Evidence names files and lines inside the vLLM wheel; the contract (tests/contract) proves the ones it can run.
VERDICT_RELEASE = "0.23.0"
VERDICTS = {
    "attention_backend": ("needed", "platforms/cuda.py:140-147: on SM12x vLLM's own order is FLASH_ATTN, FLASHINFER, "
                          "TRITON_ATTN; FlashAttention has no fp8 KV cache off SM90 (flash_attn.py:183-193) and "
                          "FlashInfer claims 7.5-12.1 (flashinfer.py:407-410), so without the flag an fp8 KV cache "
                          "runs FlashInfer."),
    "moe_backend": ("needed", "--moe-backend (config/kernel.py:122-137); marlin accepted for fp8, nvfp4, mxfp4 "
                    "(fused_moe/oracle/fp8.py:213, nvfp4.py:149, mxfp4.py:250), refused for BF16 "
                    "(unquantized.py:137-150); CUTLASS and FlashInfer MoE still claim SM12x. Marlin carries sm_120 "
                    "SASS in 19 of 20 _moe_C containers (tests/contract/test_stack_wheels.py)."),
    "flashinfer_moe_fp4_off": ("replaced", "envs.py:1482-1488 deprecates VLLM_USE_FLASHINFER_MOE_FP4 (a FutureWarning "
                               "whenever set); fused_moe/oracle/nvfp4.py:237-264 reads it only with --moe-backend "
                               "auto. Replaced by --moe-backend; the variable is no longer emitted."),
    "marlin_atomic_add": ("needed", "envs.py:1360-1362 reads VLLM_MARLIN_USE_ATOMIC_ADD as '1', off by default; "
                          "quantization/utils/marlin_utils.py:469-489 uses atomic adds only when it is set."),
    "no_enforce_eager": ("needed", "--enforce-eager still turns CUDA graphs off (engine/arg_utils.py:816, "
                         "config/model.py:217); nothing in the release forces eager mode on SM12x."),
    "no_fastsafetensors": ("obsolete", "METADATA:89 requires fastsafetensors>=0.3.2, so the virtualenv has it: the "
                           "NGC ImportError cannot happen; --load-format fastsafetensors exists "
                           "(model_executor/model_loader/__init__.py:39,57). Nothing is forbidden any more."),
    "quantization_loader": ("needed", "gptq_marlin, awq_marlin, fp8, compressed-tensors and mxfp4 remain "
                            "(quantization/__init__.py:12-45); mxfp4 on a gpt_oss checkpoint becomes gpt_oss_mxfp4 "
                            "(quantization/mxfp4.py:114-128)."),
    "kv_cache_dtype": ("needed", "config/cache.py:19-35 accepts auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2 (and nvfp4, "
                       "FlashInfer only, refused off sm100f: flashinfer.py:622-629); TRITON_ATTN takes the fp8 "
                       "kinds (v1/attention/backends/triton_attn.py:273-282)."),
    "speculative_mtp": ("needed", "config/speculative.py:34-68 keeps 'mtp' and 'draft_model'; a config without a "
                        "method still means draft_model (:544-548); *_mtp names become mtp (:550-554)."),
    "mamba_prefix_caching": ("needed", "align mode still requires block_size <= max_num_batched_tokens "
                             "(config/vllm.py:2111-2117; default 2048, config/scheduler.py:42)."),
    "vllm_host_ip": ("needed", "get_ip() reads VLLM_HOST_IP (envs.py:666, utils/network_utils.py:33-35), never "
                     "copied to Ray workers (v1/executor/ray_utils.py:33-40). The default executor is now "
                     "RayExecutorV2 (envs.py:880-882), which takes addresses from Ray (ray_executor_v2.py:280-298)."),
    "prefix_cache_metrics": ("needed", "only the counters vllm:prefix_cache_queries and vllm:prefix_cache_hits "
                             "exist (v1/metrics/loggers.py:542-559); no hit-rate gauge."),
    "triton_ptxas": ("needed", "vLLM never reads or sets TRITON_PTXAS_PATH (only CUTE_DSL_PTXAS_PATH, "
                     "vllm_flash_attn/cute/cute_dsl_ptxas.py:18); Triton itself does, so every unit sets it."),
    "cutlass_fp8_patch": ("needed", "quantization/utils/w8a8_utils.py:11-42 defines both functions and constants; "
                          "cutlass_fp8_supported() picks the activation scales (quantization/fp8.py:304) and "
                          "CUTLASS_BLOCK_FP8_SUPPORTED gates CutlassFp8BlockScaledMMKernel (scaled_mm/cutlass.py:15-16)."),
    "cutlass_fp8_disabled_kernels": ("needed", "kernels/linear/__init__.py:272-317 lists the kernels, :428-429 "
                                     "skips VLLM_DISABLED_KERNELS (envs.py:1088-1092 splits on commas); the "
                                     "CUTLASS kernels call themselves supported on any CUDA device. Run by "
                                     "tests/contract/test_fp8_kernels.py on a 12.1 stand-in."),
    "torch_cuda_build": ("needed", "METADATA:81 requires torch==2.11.0; vllm/_C.abi3.so needs libcudart.so.13 "
                         "(tests/contract/test_stack_wheels.py)."),
    "version_pins": ("needed", "METADATA:32 accepts transformers 4.57.6 (>=4.56.0, not 5.0-5.5.0); METADATA:81 "
                     "torch==2.11.0 requires triton==3.6.0."),
    "nccl_preload": ("needed", "vLLM's pynccl loads VLLM_NCCL_SO_PATH, else libnccl.so.2 (envs.py:697, "
                     "utils/nccl.py:17-35); torch binds through its DT_RPATH (test_stack_wheels.py)."),
}
VERDICT_KINDS = ("needed", "replaced", "obsolete")


def _index():
    by_id = {}
    settings = {}
    owner = {}
    for item in RULES:
        if item.id in by_id:
            raise ValueError("duplicate rule id %s" % item.id)
        by_id[item.id] = item
        for key, value in item.settings.items():
            if key in settings:
                raise ValueError("setting %s defined by %s and %s" % (key, owner[key], item.id))
            settings[key] = value
            owner[key] = item.id
    return by_id, settings, owner


RULES_BY_ID, SETTINGS, SETTING_OWNER = _index()


def rule(rule_id):
    """Return the Rule with that id (KeyError when unknown)."""
    return RULES_BY_ID[rule_id]


def setting(key):
    """Return a deep copy of one setting; KeyError naming the known keys when unknown."""
    if key not in SETTINGS:
        raise KeyError("unknown rule book setting '%s'; known settings: %s" % (key, ", ".join(sorted(SETTINGS))))
    return copy.deepcopy(SETTINGS[key])


def settings():
    """Return a deep copy of the flat {setting: value} map."""
    return copy.deepcopy(SETTINGS)


def kernel_env():
    """Environment every vLLM process on GB10 gets from the kernel rules."""
    env = {
        "VLLM_MARLIN_USE_ATOMIC_ADD": SETTINGS["vllm_marlin_use_atomic_add"],
        # vllm/envs.py splits the value on "," and keeps the spaces: no space after the commas.
        "VLLM_DISABLED_KERNELS": ",".join(SETTINGS["vllm_disabled_kernels"]),
    }
    env.update(SETTINGS["triton_ptxas_env"])
    return env


def env_violations(env):
    """What in a vLLM process environment the kernel rules forbid: a list of
    (variable, value, rule id, what to do) tuples, empty when the environment is fine.
    An override must not bring back what the rule book turned off."""
    env = dict((str(k), "" if v is None else str(v)) for k, v in (env or {}).items())
    found = []
    backend = env.get("VLLM_ATTENTION_BACKEND", "")
    if backend.upper() in SETTINGS["vllm_forbidden_attention_backends"]:
        found.append(("VLLM_ATTENTION_BACKEND", backend, "attention_backend",
                      "drop it: vLLM runs %s (--attention-backend)" % SETTINGS["vllm_attention_backend"]))
    for name in sorted(env):
        if "MOE_BACKEND" in name and env[name].lower() in SETTINGS["vllm_forbidden_moe_backends"]:
            found.append((name, env[name], "moe_backend",
                          "drop it: MoE runs %s (--moe-backend)" % SETTINGS["vllm_moe_backend"]))
    # TRITON_PTXAS_PATH may point elsewhere (another CUDA install); these two may not change.
    for name, setting_key, rule_id in (("VLLM_USE_FLASHINFER_MOE_FP4", "vllm_use_flashinfer_moe_fp4", "flashinfer_moe_fp4_off"),
                                       ("VLLM_MARLIN_USE_ATOMIC_ADD", "vllm_marlin_use_atomic_add", "marlin_atomic_add")):
        if name in env and env[name] != SETTINGS[setting_key]:
            found.append((name, env[name], rule_id, "the rule book sets %s=%s" % (name, SETTINGS[setting_key])))
    if "VLLM_DISABLED_KERNELS" in env:
        # Read as vllm/envs.py reads it: split on "," with nothing stripped (" Name" is not Name).
        missing = [k for k in SETTINGS["vllm_disabled_kernels"] if k not in env["VLLM_DISABLED_KERNELS"].split(",")]
        if missing:
            found.append(("VLLM_DISABLED_KERNELS", env["VLLM_DISABLED_KERNELS"], "cutlass_fp8_disabled_kernels",
                          "keep %s in it, comma-separated without spaces (vLLM picks them on SM121 otherwise)"
                          % ",".join(missing)))
    for name in SETTINGS["vllm_env_dropped"]:
        if name in env and not any(f[0] == name for f in found):
            found.append((name, env[name], "flashinfer_moe_fp4_off", "drop it: the rule book never emits it"))
    return found


KERNEL_MODULE_MECHANISMS = ("precompiled", "dkms")


def driver_unit(branch, flavour=None, kernel_module="precompiled"):
    """The packages that move as one on DGX OS (rule kernel_updates), named for BRANCH and the kernel FLAVOUR
    (the rule book's when None): {"userspace": [...], "module": [the module package of KERNEL_MODULE's mechanism],
    "kernel": [the kernel's metapackages], "held": userspace + module + kernel, "any_module": [the module
    metapackage, the DKMS package]} (what an OS update lifts the holds of: either mechanism's package), with the
    "branch" and the "kernel_module" mechanism it was named for."""
    if kernel_module not in KERNEL_MODULE_MECHANISMS:
        raise ValueError("kernel module mechanism %r: one of %s" % (kernel_module, ", ".join(KERNEL_MODULE_MECHANISMS)))
    names = {"branch": str(branch), "flavour": flavour or SETTINGS["kernel_flavour"]}
    userspace = [name.format(**names) for name in SETTINGS["nvidia_userspace_packages"]]
    meta = SETTINGS["nvidia_module_meta_package"].format(**names)
    dkms = SETTINGS["nvidia_dkms_package"].format(**names)
    kernel = [name.format(**names) for name in SETTINGS["kernel_meta_packages"]]
    module = [meta if kernel_module == "precompiled" else dkms]
    return {"userspace": userspace, "module": module, "kernel": kernel, "held": userspace + module + kernel,
            "any_module": [meta, dkms], "branch": names["branch"], "kernel_module": kernel_module}


def driver_branch_of(version):
    """'580.142' -> '580'; None for anything unparsable."""
    if not version:
        return None
    head = str(version).strip().split(".", 1)[0]
    return head if head.isdigit() else None


def _fmt_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join("%s: %s" % (k, _fmt_value(v)) for k, v in value.items()) + "}"
    return str(value)


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown():
    """Render the rule table as Markdown (the block between the rules markers)."""
    lines = [
        "| Rule | Settings | Why | Source | Decision | On vLLM %s |" % VERDICT_RELEASE,
        "|---|---|---|---|---|---|",
    ]
    for item in RULES:
        sets = "<br>".join(
            "`%s` = `%s`" % (key, _cell(_fmt_value(value)).replace("`", "'"))
            for key, value in item.settings.items()
        )
        verdict = VERDICTS.get(item.id)
        lines.append("| **%s**: %s | %s | %s | %s | %s | %s |" % (
            item.id,
            _cell(item.title),
            sets,
            _cell(item.reason),
            "<br>".join("`%s`" % s for s in item.sources),
            _cell(item.decision or ""),
            _cell("**%s**: %s" % verdict if verdict else ""),
        ))
    return "\n".join(lines) + "\n"


def replace_block(text, table=None):
    """Return ``text`` with the block between the rules markers replaced by the table."""
    table = render_markdown() if table is None else table
    start = text.find(RULES_BEGIN)
    end = text.find(RULES_END)
    if start < 0 or end < 0 or end < start:
        raise ValueError("markers %s ... %s not found (in that order)" % (RULES_BEGIN, RULES_END))
    return text[:start + len(RULES_BEGIN)] + "\n" + table + text[end:]
