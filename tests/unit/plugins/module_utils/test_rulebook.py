# -*- coding: utf-8 -*-
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
# The source documents lie beside the checkout (../shared/seeds), in CI as here.
SEEDS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "shared", "seeds")

# One assertion per rule: the value the seeds dictate. Removing a rule (or
# changing its value) fails here; test_every_rule_is_checked makes sure a new
# rule cannot be added without an entry.
EXPECTED = {
    "gb10_identity": {"gb10_compute_capability": "12.1", "gb10_sm": "121", "gpus_per_node": 1},
    "driver_branch": {"driver_branch": "580", "driver_forbidden_branches": ["590"],
                      "driver_recommended_version": "580.142"},
    "driver_reboot_pending": {"driver_versions_must_match": True},
    "kernel_updates": {"nvidia_kernel_module_package": "linux-modules-nvidia-{branch}-open-{kernel}",
                       "nvidia_dkms_package": "nvidia-dkms-{branch}-open",
                       "kernel_headers_package": "linux-headers-{kernel}"},
    # The EFI global variable's GUID is 8be4df61-93ca-11d2-aa0d-00e098032b8c (include/linux/efi.h), not -11d0-.
    "secure_boot_modules": {"secure_boot_efivar": "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
                            "mok_certificate": "/var/lib/shim-signed/mok/MOK.der"},
    "unified_memory": {"gpu_memory_source": "meminfo"},
    "decode_roofline": {"gb10_memory_bandwidth_gb_s": 273, "roofline_warn_share": 0.2},
    # 000: Qwen3-235B-A22B GPTQ-Int4 on two Sparks, output tok/s summed at concurrency 1, 2 and 4
    "published_figures": {},
    "attention_backend": {"vllm_attention_backend": "TRITON_ATTN"},
    "moe_backend": {"vllm_moe_backend": "marlin"},
    "flashinfer_moe_fp4_off": {"vllm_use_flashinfer_moe_fp4": "0"},
    "marlin_atomic_add": {"vllm_marlin_use_atomic_add": "1"},
    "no_enforce_eager": {"vllm_forbidden_flags": ["--enforce-eager"]},
    # Obsolete on the pinned release (VERDICTS): it requires fastsafetensors itself.
    "no_fastsafetensors": {"vllm_forbidden_load_formats": []},
    "quantization_loader": {"mxfp4_model_families": ["gpt-oss"]},
    # 003/000: CUTLASS FP4 MoE answers fluent garbage with a 200; the prompts are ours, judged below.
    "known_answers": {"known_answers_min_correct": 2},
    "kv_cache_dtype": {"kv_cache_dtype_default": "fp8"},
    "reasoning_max_tokens": {"reasoning_min_max_tokens": 512},
    "mamba_prefix_caching": {"mamba_align_block_size": 2128, "mamba_max_num_batched_tokens": 8192},
    "speculative_mtp": {"speculative_method": "mtp", "speculative_forbidden_methods": ["draft_model"]},
    "gpu_memory_utilization": {"gpu_memory_utilization_ceiling": 0.90, "gpu_memory_utilization_safe_min": 0.85,
                               "gpu_memory_utilization_safe_max": 0.87},
    "long_context_multinode_utilization": {"gpu_memory_utilization_long_context": 0.82,
                                           "long_context_threshold_tokens": 131072},
    "drop_page_cache": {"drop_caches_command": "sync; echo 3 > /proc/sys/vm/drop_caches"},
    # 002/003: a member drops before every load; the head's start waits for every member (TimeoutStartSec).
    "members_drop_page_cache": {"page_cache_drop_timeout_sec": 600},
    "privileged_exec_start_pre": {"exec_start_pre_privileged_prefix": "+"},
    "vllm_start_timeout": {},
    "prefix_cache_metrics": {"prefix_cache_hit_metrics": ["vllm:prefix_cache_hits_total",
                                                          "vllm:prefix_cache_queries_total"]},
    "host_networking": {"container_network_mode": "host"},
    # 002: docker run --ulimit stack=67108864
    "service_stack_limit": {"service_stack_limit": 67108864},
    "triton_ptxas": {"triton_ptxas_source": "/usr/local/cuda/bin/ptxas",
                     "triton_ptxas_link": "triton/backends/nvidia/bin/ptxas"},
    # The release pins themselves are checked against the contract lock (test_pins_match_the_lock), and
    # against what the pinned wheel requires by tests/contract: a bump touches the rule book alone.
    "version_pins": {"python_version": "3.12"},
    "torch_cuda_build": {"torch_version": "2.11.0", "torch_cuda_major": 13},
    "cutlass_fp8_patch": {},
    # vLLM 0.23.0's kernel class names; tests/contract/test_fp8_kernels.py holds them to the release.
    "cutlass_fp8_disabled_kernels": {"vllm_disabled_kernels": ["CutlassFP8ScaledMMLinearKernel",
                                                               "FlashInferFP8ScaledMMLinearKernel",
                                                               "CutlassInt8ScaledMMLinearKernel",
                                                               "CutlassFp8BlockScaledMMKernel"]},
    "nccl_preload": {"nccl_preload_env": "LD_PRELOAD"},
    "nvidia_device_nodes": {"nvidia_devices_unit": "sparkfleet-nvidia-devices"},
    "nccl_sm121": {"nccl_version": "2.28.9", "nccl_git_tag": "v2.28.9-1", "nccl_required_sass": "sm_121"},
    "fabric_mtu": {"fabric_mtu": 9000, "jumbo_ping_payload": 8972},
    "qsfp_both_halves": {"qsfp_halves_per_port": 2},
    "nccl_ib_hca": {"nccl_pin_ib_hca": True},
    "nccl_ib_transport": {"nccl_ib_disable": "0", "nccl_net_plugin": "none", "nccl_ib_roce_version_num": "2",
                          "nccl_ib_timeout": "22"},
    "nccl_gid_index": {"nccl_gid_type": "RoCE v2", "nccl_gid_family": "ipv4"},
    "nccl_conf_ib_disable": {"nccl_conf_forbidden": ["NCCL_IB_DISABLE=1"]},
    "gpudirect_rdma": {"gpudirect_rdma_supported": False, "nccl_net_gdr_level": "LOC"},
    "nccl_p2p": {"nccl_p2p_disable": "1"},
    "fabric_interface_env": {"fabric_ifname_env_vars": ["NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES",
                                                        "GLOO_SOCKET_IFNAME"]},
    "vllm_host_ip": {"vllm_host_ip_source": "fabric_address"},
    "ray_memory_monitor": {"ray_memory_monitor_refresh_ms": 0, "ray_memory_usage_threshold": 1.0},
    "memory_guard": {"memory_guard_program": "earlyoom", "memory_guard_term_percent": 4,
                     "memory_guard_kill_percent": 2, "memory_guard_swap_percent": 100},
    "parallelism_across_nodes": {"tensor_parallel_max_nodes": 2},
    "nccl_bandwidth_floor": {},
}


def test_every_rule_is_checked():
    assert sorted(EXPECTED) == sorted(rulebook.RULES_BY_ID)


@pytest.mark.parametrize("rule_id", sorted(EXPECTED))
def test_rule_values(rule_id):
    item = rulebook.rule(rule_id)
    for key, value in EXPECTED[rule_id].items():
        assert item.settings[key] == value, key


@pytest.mark.parametrize("rule_id", sorted(EXPECTED))
def test_rule_is_complete(rule_id):
    item = rulebook.rule(rule_id)
    assert item.settings and item.reason and item.title
    assert item.sources and set(item.sources) <= set(rulebook.SOURCES + rulebook.FIELD_REPORTS
                                                     + rulebook.PUBLIC_RECORDS)


def test_field_reports_are_addresses():
    assert not set(rulebook.FIELD_REPORTS) & set(rulebook.SOURCES)
    for address in rulebook.FIELD_REPORTS:
        assert address.startswith("https://github.com/") and "/issues/" in address, address


def test_public_records_are_pinned_addresses():
    assert not set(rulebook.PUBLIC_RECORDS) & set(rulebook.SOURCES + rulebook.FIELD_REPORTS)
    for address in rulebook.PUBLIC_RECORDS:
        assert address.startswith("https://"), address
        # a repository's file is read at one commit: the fact cited is the one in that version
        assert "/blob/" not in address or re.search(r"/blob/[0-9a-f]{40}/", address), address


def test_trusted_signers_say_why_with_their_sources():
    signers = rulebook.setting("module_trusted_signers")
    assert [entry["signer"] for entry in signers] == ["Canonical Ltd. Kernel Module Signing",
                                                      "Canonical Ltd. Kernel Module Signing 2025 Kmod"]
    for entry in signers:
        assert set(entry) == {"signer", "why", "sources"}, entry
        assert entry["why"] and entry["sources"] and set(entry["sources"]) <= set(rulebook.PUBLIC_RECORDS)


def test_known_bad_kernels_name_why_fix_and_sources():
    for entry in rulebook.setting("known_bad_kernels"):
        assert set(entry) == {"release", "why", "fix", "sources"}, entry
        assert entry["why"] and entry["fix"] and set(entry["sources"]) <= set(rulebook.FIELD_REPORTS)
    for check in rulebook.setting("kernel_config_checks"):
        assert set(check) == {"option", "value", "unless_cmdline", "why", "fix", "sources"}, check
        assert check["option"].startswith("CONFIG_") and set(check["sources"]) <= set(rulebook.FIELD_REPORTS)


def test_sources_exist():
    assert os.path.isdir(SEEDS), "the source documents must lie beside the checkout: %s" % os.path.abspath(SEEDS)
    for name in rulebook.SOURCES:
        assert os.path.isfile(os.path.join(SEEDS, name)), name


@pytest.mark.parametrize("rule_id", ["driver_branch", "no_enforce_eager", "version_pins", "nccl_ib_transport",
                                     "nccl_conf_ib_disable", "gpudirect_rdma", "flashinfer_moe_fp4_off",
                                     "privileged_exec_start_pre", "cutlass_fp8_disabled_kernels"])
def test_disagreements_are_decided(rule_id):
    assert rulebook.rule(rule_id).decision


def test_start_timeout_covers_load_and_compile():
    # 13 minutes of weight loading plus compile (004), ~15 min to first token on two nodes (000)
    assert rulebook.setting("vllm_start_timeout_sec") >= 15 * 60


def test_the_units_stack_limit_is_the_seeds_containers():
    # The one value both say: the containers' --ulimit and the units' LimitSTACK=.
    flags = rulebook.setting("container_run_flags")
    assert "stack=%d" % rulebook.setting("service_stack_limit") in flags


def test_members_drop_timeout_leaves_the_load_to_the_start_timeout():
    # The drops before vLLM starts are bounded apart from the load itself (readiness, the head watch).
    assert 0 < rulebook.setting("page_cache_drop_timeout_sec") < rulebook.setting("vllm_start_timeout_sec")


def test_cutlass_patch_names_both_functions_and_constants():
    patch = rulebook.setting("cutlass_fp8_patch")
    assert patch["file"] == "vllm/model_executor/layers/quantization/utils/w8a8_utils.py"
    assert patch["functions"] == ["cutlass_fp8_supported", "cutlass_block_fp8_supported"]
    assert patch["constants"] == ["CUTLASS_FP8_SUPPORTED", "CUTLASS_BLOCK_FP8_SUPPORTED"]


def test_bandwidth_floor_separates_roce_from_sockets():
    floor = rulebook.setting("nccl_bus_bandwidth_floor_gbps")
    assert rulebook.setting("nccl_bus_bandwidth_socket_gbps") < floor < rulebook.setting("nccl_bus_bandwidth_roce_gbps")


def test_quantization_map():
    qmap = rulebook.setting("quantization_by_checkpoint_format")
    assert qmap["gptq"] == "gptq_marlin"
    assert qmap["fp8"] == "fp8"
    assert qmap["nvfp4"] == "compressed-tensors"
    assert qmap["mxfp4"] == "mxfp4"


def test_kernel_env():
    env = rulebook.kernel_env()
    # Replaced by --moe-backend in the pinned release (rule flashinfer_moe_fp4_off): not emitted.
    assert "VLLM_USE_FLASHINFER_MOE_FP4" not in env
    assert env["VLLM_MARLIN_USE_ATOMIC_ADD"] == "1"
    assert env["TRITON_PTXAS_PATH"] == "/usr/local/cuda/bin/ptxas"
    # vllm/envs.py splits on "," and strips nothing.
    assert env["VLLM_DISABLED_KERNELS"].split(",") == rulebook.setting("vllm_disabled_kernels")
    assert " " not in env["VLLM_DISABLED_KERNELS"]


def test_setting_unknown_names_known_keys():
    with pytest.raises(KeyError) as err:
        rulebook.setting("no_such_key")
    assert "no_such_key" in str(err.value) and "driver_branch" in str(err.value)


def test_setting_returns_copies():
    rulebook.setting("driver_forbidden_branches").append("999")
    assert rulebook.setting("driver_forbidden_branches") == ["590"]


@pytest.mark.parametrize("version,branch", [("580.142", "580"), ("590.44.01", "590"), ("", None), (None, None),
                                            ("N/A", None)])
def test_driver_branch_of(version, branch):
    assert rulebook.driver_branch_of(version) == branch


def test_render_has_every_rule():
    table = rulebook.render_markdown()
    for rule_id in rulebook.RULES_BY_ID:
        assert "**%s**" % rule_id in table


def test_replace_block_needs_markers():
    with pytest.raises(ValueError):
        rulebook.replace_block("no markers here")
    out = rulebook.replace_block("a\n%s\nold\n%s\nb\n" % (rulebook.RULES_BEGIN, rulebook.RULES_END), "T\n")
    assert out == "a\n%s\nT\n%s\nb\n" % (rulebook.RULES_BEGIN, rulebook.RULES_END)


def test_docs_rules_md_matches_code():
    with open(os.path.join(REPO, "docs", "rules.md"), encoding="utf-8") as handle:
        text = handle.read()
    assert rulebook.RULES_BEGIN in text, "docs/rules.md lost its rule table markers"
    assert rulebook.replace_block(text) == text, "docs/rules.md drifted: run make docs"


def test_the_table_is_rendered_once():
    """docs/rules.md holds the rule table; the README links to it instead of holding a copy."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    assert rulebook.RULES_BEGIN not in readme and rulebook.RULES_END not in readme
    assert "| Rule | Settings |" not in readme
    assert "[docs/rules.md](docs/rules.md)" in readme.split("## The rule book", 1)[1].split("\n## ", 1)[0]


def test_render_rules_cli_check(tmp_path):
    tool = os.path.join(REPO, "tools", "render_rules.py")
    doc = tmp_path / "x.md"
    doc.write_text("# x\n%s\nstale\n%s\n" % (rulebook.RULES_BEGIN, rulebook.RULES_END))
    assert subprocess.call([sys.executable, tool, "--check", str(doc)], stderr=subprocess.DEVNULL) == 1
    assert subprocess.call([sys.executable, tool, str(doc)], stdout=subprocess.DEVNULL) == 0
    assert subprocess.call([sys.executable, tool, "--check", str(doc)]) == 0
    assert subprocess.call([sys.executable, tool, "--check", os.path.join(REPO, "docs", "rules.md")]) == 0
    # Without a file: docs/rules.md, the one the Makefile's docs target renders.
    assert subprocess.call([sys.executable, tool, "--check"]) == 0


def test_pins_match_the_lock():
    """The vLLM and Ray the rule book pins are the wheels tools/contract.lock holds hashes of."""
    lock = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "tools", "contract.lock")
    with open(lock) as handle:
        pinned = dict(line.split()[0].split("==") for line in handle if line.strip() and not line.startswith("#"))
    assert pinned == {"vllm": rulebook.setting("vllm_version"), "ray": rulebook.setting("ray_version")}


def test_the_published_figures_are_the_seeds():
    qwen = [f for f in rulebook.setting("published_figures") if f["model"] == "Qwen/Qwen3-235B-A22B-GPTQ-Int4"][0]
    assert (qwen["output_tok_s"], qwen["tensor_parallel_size"], qwen["active_params_b"], qwen["source"]) == (
        {"1": 17.0, "2": 24.1, "4": 36.4}, 2, 22, rulebook.S000)


def test_known_answers_forgive_one_miss_and_fit_one_kv_block():
    answers = rulebook.setting("known_answers")
    assert len(answers) >= 3
    assert 1 <= len(answers) - rulebook.setting("known_answers_min_correct") <= 1
    for item in answers:
        assert item["prompt"].strip() == item["prompt"] and item["expect"]
        assert all(word.strip() and " " not in word for word in item["expect"]), item
    # A vLLM KV block holds 16 tokens on the GPU (128 on the CPU build); a prompt of a few common words stays well
    # under one, so the second determinism ask is computed anew, not read from the prefix cache.
    assert len(rulebook.setting("determinism_prompt").split()) <= 4
    assert 1 <= rulebook.setting("determinism_max_tokens") <= rulebook.setting("known_answers_max_tokens")


def test_every_rule_vllm_decides_has_a_verdict_on_the_pinned_release():
    """Each SM121 rule that vLLM's code decides was re-checked against the pinned release's files: a bump of
    vllm_version without a new re-check (VERDICT_RELEASE) fails here."""
    assert rulebook.VERDICT_RELEASE == rulebook.setting("vllm_version")
    ids = set(r.id for r in rulebook.RULES)
    assert set(rulebook.VERDICTS) <= ids, set(rulebook.VERDICTS) - ids
    judged = ("cutlass_fp8_patch", "cutlass_fp8_disabled_kernels", "flashinfer_moe_fp4_off", "no_fastsafetensors",
              "attention_backend", "moe_backend", "speculative_mtp", "kv_cache_dtype", "vllm_host_ip",
              "torch_cuda_build", "version_pins", "marlin_atomic_add", "triton_ptxas", "nccl_preload")
    assert not [i for i in judged if i not in rulebook.VERDICTS]
    for rule_id, (kind, evidence) in rulebook.VERDICTS.items():
        assert kind in rulebook.VERDICT_KINDS, rule_id
        assert re.search(r"\.py:\d+|METADATA:\d+|tests/contract/", evidence), (rule_id, evidence)


def test_an_obsolete_rule_restricts_nothing_and_a_replaced_one_is_not_emitted():
    obsolete = [i for i, (kind, _e) in rulebook.VERDICTS.items() if kind == "obsolete"]
    assert obsolete == ["no_fastsafetensors"]
    assert rulebook.setting("vllm_forbidden_load_formats") == []
    replaced = [i for i, (kind, _e) in rulebook.VERDICTS.items() if kind == "replaced"]
    assert replaced == ["flashinfer_moe_fp4_off"]
    assert "VLLM_USE_FLASHINFER_MOE_FP4" not in rulebook.kernel_env()
    assert rulebook.env_violations({"VLLM_USE_FLASHINFER_MOE_FP4": "1"})


def test_the_rule_table_shows_each_verdict():
    table = rulebook.render_markdown()
    assert "On vLLM %s" % rulebook.VERDICT_RELEASE in table.splitlines()[0]
    row = [line for line in table.splitlines() if line.startswith("| **no_fastsafetensors**")][0]
    assert row.rstrip().endswith("|") and "**obsolete**: METADATA:89" in row
