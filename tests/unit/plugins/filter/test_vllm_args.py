# -*- coding: utf-8 -*-
import copy
import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.vllm_args import vllm_args, FilterModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

from seed_configs import SEEDS, parse_argv

NOMINAL = {"driver": {"nvidia_smi_version": "580.142", "kernel_module_version": "580.142", "branch": "580",
                      "forbidden_branch": False, "reboot_pending": False}}


def run(entry, cluster=None, facts=None, host="spark-1"):
    return vllm_args(entry, NOMINAL if facts is None else facts, cluster or {"nnodes": 1}, host=host)


def test_registered():
    assert FilterModule().filters()["vllm_args"] is vllm_args


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_matches_what_the_seed_ran(seed):
    cfg = SEEDS[seed]
    argv = run(cfg["entry"], cfg["cluster"])
    assert all(isinstance(a, str) for a in argv)
    ours_pos, ours = parse_argv(argv)
    ran_pos, ran = parse_argv(cfg["ran"])
    assert ours_pos == ran_pos  # vllm serve MODEL
    for flag, value in ran.items():
        if flag in cfg["removed"]:
            assert flag not in ours, "%s: %s" % (flag, cfg["removed"][flag])
            continue
        assert flag in ours, "%s ran with %s" % (cfg["source"], flag)
        if flag == "--speculative-config":
            assert json.loads(ours[flag]) == json.loads(value)
        elif flag == "--gpu-memory-utilization":
            assert float(ours[flag]) == float(value)
        else:
            assert ours[flag] == value, flag
    extra = set(ours) - set(ran)
    assert extra <= set(cfg["added"]), "flags not in %s and not explained: %s" % (cfg["source"], extra - set(cfg["added"]))


def test_rulebook_flags_on_every_seed():
    for seed, cfg in SEEDS.items():
        _pos, opts = parse_argv(run(cfg["entry"], cfg["cluster"]))
        assert opts["--attention-backend"] == "TRITON_ATTN", seed
        assert "--enforce-eager" not in opts, seed
        assert float(opts["--gpu-memory-utilization"]) <= 0.90, seed
        if cfg["entry"].get("moe"):
            assert opts["--moe-backend"] == "marlin", seed


def test_mp_executor_head_and_follower():
    entry = dict(SEEDS["qwen35_122b_fp8_tp2"]["entry"])
    cluster = {"executor": "mp", "nnodes": 2, "node_rank": 0, "master_addr": "192.168.100.10", "master_port": 29501,
               "vllm_bin": "/opt/vllm/venv/bin/vllm"}
    head = run(entry, cluster)
    assert head[:2] == ["/opt/vllm/venv/bin/vllm", "serve"]
    _p, opts = parse_argv(head)
    assert opts["--distributed-executor-backend"] == "mp"
    assert (opts["--nnodes"], opts["--node-rank"], opts["--master-addr"], opts["--master-port"]) == \
        ("2", "0", "192.168.100.10", "29501")
    assert "--headless" not in opts
    follower = run(entry, dict(cluster, node_rank=1))
    assert "--headless" in follower and parse_argv(follower)[1]["--node-rank"] == "1"


def test_mp_needs_master_addr():
    with pytest.raises(AnsibleFilterError, match="master_addr"):
        run(SEEDS["qwen35_122b_fp8_tp2"]["entry"], {"executor": "mp", "nnodes": 2})


def test_ray_follower_does_not_serve():
    with pytest.raises(AnsibleFilterError, match="ray start"):
        run(SEEDS["qwen35_122b_fp8_tp2"]["entry"], {"executor": "ray", "nnodes": 2, "node_rank": 1})


def base(**over):
    entry = {"name": "m", "model": "Qwen/Qwen3-30B-A3B-FP8", "checkpoint_format": "fp8", "moe": True}
    entry.update(over)
    return entry


def test_defaults():
    _p, opts = parse_argv(run(base()))
    assert opts["--gpu-memory-utilization"] == "0.87"
    assert opts["--kv-cache-dtype"] == "fp8"
    assert opts["--quantization"] == "fp8"
    assert opts["--enable-prefix-caching"] is True
    assert "--distributed-executor-backend" not in opts


def test_api_key_never_in_argv():
    argv = run(base(api_key_file="/etc/sparkfleet/vllm-api-key.env"))
    assert not any("api-key" in a or "vllm-api-key" in a for a in argv)
    with pytest.raises(AnsibleFilterError, match="api_key_file"):
        run(base(extra_args=["--api-key", "sk-123"]))


# Each forbidden combination: the error must name host, model and key.
ERRORS = [
    ("unknown key", base(max_model_length=4096), {"nnodes": 1}, "max_model_length"),
    ("enforce-eager without reason", base(enforce_eager=True), {"nnodes": 1}, "enforce_eager"),
    ("enforce-eager in extra_args", base(extra_args=["--enforce-eager"]), {"nnodes": 1}, "extra_args"),
    ("known answers off without reason", base(correctness_check=False), {"nnodes": 1}, "correctness_check_off_reason"),
    ("reason while the check is on", base(correctness_check_off_reason="random weights"), {"nnodes": 1},
     "correctness_check_off_reason"),
    ("managed flag", base(extra_args=["--port", "9"]), {"nnodes": 1}, "extra_args"),
    ("mxfp4 on qwen", base(checkpoint_format="mxfp4"), {"nnodes": 1}, "checkpoint_format"),
    ("loader mismatch", base(quantization="mxfp4"), {"nnodes": 1}, "quantization"),
    ("draft_model", base(speculative={"method": "draft_model", "model": "x", "num_speculative_tokens": 2}),
     {"nnodes": 1}, "speculative.method"),
    ("speculative unknown", base(speculative={"method": "mtp", "num_speculative_tokens": 2, "depth": 1}),
     {"nnodes": 1}, "speculative.depth"),
    ("speculative tokens", base(speculative={"method": "mtp"}), {"nnodes": 1}, "num_speculative_tokens"),
    ("above ceiling", base(gpu_memory_utilization=0.93), {"nnodes": 1}, "gpu_memory_utilization"),
    ("long ctx multinode", base(gpu_memory_utilization=0.87, max_model_len=131072, tensor_parallel_size=2),
     {"executor": "ray", "nnodes": 2}, "gpu_memory_utilization"),
    ("mamba block size", base(mamba=True, max_num_batched_tokens=2048), {"nnodes": 1}, "max_num_batched_tokens"),
    ("tp x pp vs nodes", base(tensor_parallel_size=2), {"nnodes": 1}, "tensor_parallel_size"),
    ("tp over 3 nodes", base(tensor_parallel_size=3), {"executor": "ray", "nnodes": 3}, "tensor_parallel_size"),
    ("ep without moe", base(moe=False, enable_expert_parallel=True), {"nnodes": 1}, "enable_expert_parallel"),
    ("nvfp4 kv", base(kv_cache_dtype="nvfp4"), {"nnodes": 1}, "kv_cache_dtype"),
    ("bad type", base(port="8000"), {"nnodes": 1}, "port"),
    ("missing format", {"name": "m", "model": "x"}, {"nnodes": 1}, "checkpoint_format"),
    ("unknown cluster key", base(), {"nnodes": 1, "execuor": "mp"}, "execuor"),
]


@pytest.mark.parametrize("label,entry,cluster,key", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_host_model_key(label, entry, cluster, key):
    with pytest.raises(AnsibleFilterError) as err:
        run(entry, cluster)
    msg = str(err.value)
    assert "spark-1" in msg and "model m" in msg and key in msg, msg


def test_enforce_eager_with_reason_is_allowed():
    argv = run(base(enforce_eager=True, allow_enforce_eager_reason="vendor bug 1234 until the next NGC image"))
    assert "--enforce-eager" in argv


def test_known_answers_off_with_reason_is_allowed_and_changes_no_argument():
    argv = run(base(correctness_check=False, correctness_check_off_reason="random weights (tools/make_tiny_model.py)"))
    assert argv == run(base())


@pytest.mark.parametrize("entry, key, fix", [
    ({"correctness_check": False}, "correctness_check", "correctness_check_off_reason"),
    ({"correctness_check": False, "correctness_check_off_reason": "  "}, "correctness_check_off_reason", "leave"),
    ({"correctness_check_off_reason": "random weights"}, "correctness_check_off_reason", "correctness_check: false"),
    ({"correctness_check": True, "correctness_check_off_reason": "random weights"}, "correctness_check_off_reason",
     "correctness_check: false"),
])
def test_known_answers_off_needs_a_reason_and_a_reason_needs_them_off(entry, key, fix):
    with pytest.raises(AnsibleFilterError) as err:
        run(base(**entry))
    lines = str(err.value).splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("host spark-1, model m: key '%s' is " % key) and fix in lines[0].split(". Fix: ")[1]


def test_mamba_prefix_caching_defaults_to_8192():
    _p, opts = parse_argv(run(base(mamba=True)))
    assert opts["--max-num-batched-tokens"] == "8192"
    _p, opts = parse_argv(run(base(mamba=True, enable_prefix_caching=False)))
    assert "--max-num-batched-tokens" not in opts and "--no-enable-prefix-caching" in opts


def test_long_context_multinode_default_is_082():
    entry = base(max_model_len=131072, tensor_parallel_size=2)
    _p, opts = parse_argv(run(entry, {"executor": "ray", "nnodes": 2}))
    assert opts["--gpu-memory-utilization"] == "0.82"


@pytest.mark.parametrize("facts,word", [
    ({"driver": {"forbidden_branch": True, "nvidia_smi_version": "590.44.01"}}, "590"),
    ({"driver": {"reboot_pending": True, "nvidia_smi_version": "580.142", "kernel_module_version": "580.95.05"}},
     "reboot"),
])
def test_driver_facts_refused(facts, word):
    with pytest.raises(AnsibleFilterError, match=word):
        run(base(), facts=facts)


def test_input_not_modified():
    entry = base(speculative={"method": "mtp", "num_speculative_tokens": 2}, extra_args=["--seed", "1"])
    before = copy.deepcopy(entry)
    argv = run(entry)
    assert entry == before and argv[-2:] == ["--seed", "1"]


def test_gb10_facts_must_be_dict():
    with pytest.raises(AnsibleFilterError, match="gb10_facts"):
        vllm_args(base(), "nope", {"nnodes": 1})


def test_rulebook_values_are_used(monkeypatch):
    # the filter reads the rule book, it does not repeat it
    monkeypatch.setitem(rulebook.SETTINGS, "vllm_attention_backend", "SOMETHING_ELSE")
    assert parse_argv(run(base()))[1]["--attention-backend"] == "SOMETHING_ELSE"


# --- what the pinned release serves (plugins/module_utils/vllm_release.py) ---

def test_bf16_moe_takes_triton_quantized_moe_takes_marlin():
    """vLLM 0.19.0 raises ValueError at model build for marlin on unquantized experts (seed 000's
    Qwen3-30B-A3B BF16); quantized experts keep Marlin (rule moe_backend)."""
    bf16 = parse_argv(run(base(model="Qwen/Qwen3-30B-A3B", checkpoint_format="bf16")))[1]
    assert bf16["--moe-backend"] == "triton" and "--quantization" not in bf16
    runtime_fp8 = parse_argv(run(base(model="Qwen/Qwen3-30B-A3B", checkpoint_format="bf16", quantization="fp8")))[1]
    assert runtime_fp8["--moe-backend"] == "marlin"
    for fmt in ("fp8", "nvfp4", "gptq", "awq"):
        assert parse_argv(run(base(checkpoint_format=fmt)))[1]["--moe-backend"] == "marlin", fmt
    assert "--moe-backend" not in parse_argv(run(base(moe=False, checkpoint_format="bf16")))[1]


def test_a_moe_backend_the_release_refuses_is_refused(monkeypatch):
    """Were the rule book to pick marlin for BF16 experts again, the release's own table refuses it."""
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_release
    settings = dict(rulebook.SETTINGS, vllm_moe_backend_by_kernel={})
    monkeypatch.setattr(rulebook, "SETTINGS", settings)
    with pytest.raises(AnsibleFilterError) as err:
        run(base(model="Qwen/Qwen3-30B-A3B", checkpoint_format="bf16"))
    text = str(err.value)
    assert "--moe-backend marlin for unquantized MoE weights" in text
    assert "vLLM %s accepts only triton" % vllm_release.VLLM_VERSION in text


def test_gemma4_is_refused_with_the_release_named():
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_release
    gemma4 = base(name="gemma4-26b", model="google/gemma-4-26B-A4B-it", checkpoint_format="bf16", quantization="fp8",
                  architecture="Gemma4ForConditionalGeneration", model_type="gemma4",
                  speculative={"method": "mtp", "model": "google/gemma-4-26B-A4B-it-assistant",
                               "num_speculative_tokens": 4})
    with pytest.raises(AnsibleFilterError) as err:
        run(gemma4, host="spark-2")
    text = str(err.value)
    assert "host spark-2, model gemma4-26b: key 'model_type' is 'gemma4'" in text
    assert "vLLM %s" % vllm_release.VLLM_VERSION in text and "transformers %s" % vllm_release.TRANSFORMERS_VERSION in text
    assert "pin a release that serves it" in text


def test_config_json_on_the_host_wins_over_the_declaration():
    """Where the host has the checkpoint, what its config.json says is judged, not what the entry declares."""
    entry = base(name="q", model="/var/lib/sparkfleet/models/q", architecture="Qwen3MoeForCausalLM",
                 model_type="qwen3_moe")
    facts = dict(NOMINAL, model_configs={"q": {"architectures": ["Gemma4ForConditionalGeneration"],
                                               "model_type": "gemma4", "remote_config": False}})
    with pytest.raises(AnsibleFilterError, match="config.json model_type' is 'gemma4'"):
        run(entry, facts=facts)
    # A config the model ships code for is read with trust_remote_code.
    facts["model_configs"]["q"]["remote_config"] = True
    assert run(dict(entry, trust_remote_code=True), facts=facts)


@pytest.mark.parametrize("entry, key", [
    (base(architecture="BertModel"), "architecture"),
    (base(model_type="no_such_type"), "model_type"),
    (base(model_type="qwen3_moe", speculative={"method": "mtp", "num_speculative_tokens": 2}), "speculative.method"),
])
def test_each_release_check_can_fail(entry, key):
    with pytest.raises(AnsibleFilterError, match="key '%s'" % key):
        run(entry)


def test_mtp_on_a_model_with_mtp_layers_passes():
    entry = base(model="RedHatAI/Qwen3.6-35B-A3B-NVFP4", checkpoint_format="nvfp4",
                 architecture="Qwen3_5MoeForConditionalGeneration", model_type="qwen3_5_moe",
                 speculative={"method": "mtp", "num_speculative_tokens": 2})
    assert "--speculative-config" in run(entry)


# --- extra_args read as vLLM's parser reads them ---

@pytest.mark.parametrize("extra, says", [
    (["--enforce_eager"], "--enforce-eager, which the rule book forbids"),
    (["--max_num_seqs", "8"], "--max-num-seqs, which the collection sets itself"),
    (["--speculative_config.method=draft_model"], "--speculative-config, which the collection sets itself"),
    (["--max_num_seqs=8"], "--max-num-seqs, which the collection sets itself"),
    (["--max-num-seqs 8"], "'--max-num-seqs 8' as one item"),
    (["--enforce-eager now"], "--enforce-eager, which the rule book forbids"),
])
def test_extra_args_are_read_as_the_parser_reads_them(extra, says):
    with pytest.raises(AnsibleFilterError) as err:
        run(base(extra_args=extra))
    assert says in str(err.value)


def test_unmanaged_extra_args_pass_in_either_spelling():
    assert run(base(extra_args=["--disable_log_stats", "--max-logprobs=5"]))[-2:] == ["--disable_log_stats",
                                                                                      "--max-logprobs=5"]


def test_tp2_without_nodes_suggests_nodes_and_tp1_only_where_the_model_fits():
    facts = dict(NOMINAL, memory={"mem_total_bytes": 128 * 2 ** 30})
    with pytest.raises(AnsibleFilterError) as big:
        run(base(model="Qwen/Qwen3-235B-A22B-GPTQ-Int4", checkpoint_format="gptq", tensor_parallel_size=2,
                 weights_gib=118), facts=facts)
    assert "list the 2 hosts the model spans in 'nodes'" in str(big.value)
    assert "tensor_parallel_size: 1" not in str(big.value)
    with pytest.raises(AnsibleFilterError) as small:
        run(base(tensor_parallel_size=2, weights_gib=30), facts=facts)
    assert "since its weights (30 GiB) fit one Spark, set tensor_parallel_size: 1" in str(small.value)


@pytest.mark.parametrize("extra, says", [(["--api-key", "sk-visible-123"], "api_key_file"),
                                         (["--hf-token=tok-visible-456"], "vllm_service_hf_token")])
def test_a_secret_in_extra_args_is_refused_and_never_shown(extra, says):
    """A secret on vLLM's command line lands in the 0644 unit file and in ps: refused, and the refusal, which quotes
    the whole list, hides it (plugins/module_utils/redaction.py)."""
    with pytest.raises(AnsibleFilterError) as err:
        run(base(extra_args=extra))
    assert says in str(err.value)
    assert "visible-" not in str(err.value) and "(hidden)" in str(err.value)


@pytest.mark.parametrize("model, says", [("~/models/qwen3", "home-relative"), ("./models/qwen3", "relative"),
                                         ("../qwen3", "relative")])
def test_a_relative_model_path_is_refused(model, says):
    """vllm serve takes the path literally, from the unit's working directory: legal YAML, wrong for its reader."""
    with pytest.raises(AnsibleFilterError) as err:
        run(base(model=model))
    assert says in str(err.value) and "model" in str(err.value)


def test_an_absolute_path_and_a_hub_id_pass():
    assert run(base(model="/srv/models/qwen3"))
    assert run(base(model="Qwen/Qwen3-8B-FP8"))


def test_fastsafetensors_is_no_longer_refused():
    """Rule no_fastsafetensors is obsolete on the pinned release (it requires fastsafetensors): the loader passes."""
    assert run(base(extra_args=["--load-format", "fastsafetensors"]))[-2:] == ["--load-format", "fastsafetensors"]
