# -*- coding: utf-8 -*-
import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.gpu_memory_utilization import (
    FilterModule, gpu_memory_utilization)
from ansible_collections.sparkfleet.gb10.plugins.filter import memory_sizable as sizable_filter
from ansible_collections.sparkfleet.gb10.plugins.filter.memory_sizable import memory_sizable

from seed_configs import SEEDS

GB10 = {"memory": {"mem_total_bytes": 127601212 * 1024}}  # 121.69 GiB, as Ray saw it (004)

QWEN3_235B = dict(SEEDS["qwen3_235b_gptq_tp2_ep2"]["entry"])
QWEN3_235B.pop("gpu_memory_utilization")


def small(name, **over):
    entry = {"name": name, "model": "m/" + name, "checkpoint_format": "fp8", "weights_gib": 30.0, "num_layers": 48,
             "num_kv_heads": 4, "head_dim": 128, "max_model_len": 32768, "max_num_seqs": 4}
    entry.update(over)
    return entry


def test_registered():
    assert FilterModule().filters()["gpu_memory_utilization"] is gpu_memory_utilization


def test_seed_000_two_node_235b_gets_087():
    # 000 ran 0.87 with 57.64 GiB of weights per node; params x 0.53 B/param gives ~58 GiB
    plan = gpu_memory_utilization(GB10, [QWEN3_235B], host="spark-1")
    svc = plan["services"]["qwen3-235b"]
    assert svc["utilization"] == 0.87
    assert 57.0 < svc["weights_gib"] < 59.0
    assert svc["nodes"] == 2
    assert plan["mem_total_gib"] == 121.69


def test_never_above_ceiling_and_rounded_down():
    plan = gpu_memory_utilization(GB10, [small("a")], target=0.90, os_headroom_gib=0)
    assert plan["services"]["a"]["utilization"] == 0.90
    plan = gpu_memory_utilization(GB10, [small("a")], os_headroom_gib=20)
    assert plan["services"]["a"]["utilization"] == 0.83  # (121.69 - 20) / 121.69 = 0.8356 -> 0.83
    with pytest.raises(AnsibleFilterError, match="target"):
        gpu_memory_utilization(GB10, [small("a")], target=0.95)


def test_long_context_multi_node_is_082():
    entry = small("long", max_model_len=131072, tensor_parallel_size=2, max_num_seqs=1)
    plan = gpu_memory_utilization(GB10, [entry])
    assert plan["services"]["long"]["utilization"] == 0.82
    assert plan["services"]["long"]["long_context_multi_node"] is True


def test_single_node_long_context_is_not_capped_at_082():
    plan = gpu_memory_utilization(GB10, [small("long", max_model_len=131072, max_num_seqs=1)])
    assert plan["services"]["long"]["utilization"] == 0.87


def test_co_located_services_share_the_budget():
    plan = gpu_memory_utilization(GB10, [small("big", weights_gib=60.0), small("tiny", weights_gib=6.0)])
    big, tiny = plan["services"]["big"], plan["services"]["tiny"]
    assert big["utilization"] > tiny["utilization"]
    assert plan["total_utilization"] <= 0.87
    for svc in (big, tiny):
        assert svc["utilization"] * plan["mem_total_gib"] >= svc["need_gib"]


def test_explicit_value_is_kept_and_others_fill_the_rest():
    # 002's Spark 2 once ran Nemotron-Nano at 0.28 beside Gemma4
    plan = gpu_memory_utilization(GB10, [small("gemma", weights_gib=26.0), small("nano", weights_gib=16.0,
                                                                                 gpu_memory_utilization=0.28)])
    assert plan["services"]["nano"]["utilization"] == 0.28
    assert plan["services"]["gemma"]["utilization"] == 0.59


@pytest.mark.parametrize("values", [[0.89], [0.90], [0.45, 0.44]])
def test_explicit_values_of_every_service_may_reach_the_ceiling(values):
    # The rule book allows up to 0.90 when the inventory says so; only the filter's own shares keep to 0.87.
    services = [small("s%d" % i, gpu_memory_utilization=v) for i, v in enumerate(values)]
    plan = gpu_memory_utilization(GB10, services, host="spark-1")
    assert [plan["services"]["s%d" % i]["utilization"] for i in range(len(values))] == values


def test_does_not_fit_shows_the_arithmetic():
    big = small("huge", weights_gib=200.0)
    with pytest.raises(AnsibleFilterError) as err:
        gpu_memory_utilization(GB10, [big], host="spark-1")
    msg = str(err.value)
    assert "spark-1" in msg and "do not fit" in msg and "weights 200.00" in msg and "MemTotal 121.69" in msg


def test_weights_from_params_and_format():
    plan = gpu_memory_utilization(GB10, [small("p", weights_gib=None, params_b=30.0, checkpoint_format="nvfp4")])
    assert plan["services"]["p"]["weights_gib"] == round(30e9 * 0.5625 / 2 ** 30, 2)


def test_kv_arithmetic():
    plan = gpu_memory_utilization(GB10, [small("kv", weights_gib=1.0, max_num_seqs=2, kv_cache_dtype="bfloat16")])
    # 2 x 48 layers x 4 heads x 128 dim x 2 bytes x 32768 tokens x 2 seqs = 6 GiB
    assert plan["services"]["kv"]["kv_gib"] == 6.0


@pytest.mark.parametrize("facts,services,word", [
    ({}, [small("a")], "mem_total_bytes"),
    ("x", [small("a")], "ansible_facts.gb10"),
    (GB10, [], "non-empty"),
    (GB10, [small("a", weights_gib=None)], "params_b"),
    (GB10, [small("a", num_layers=None)], "num_layers"),
    (GB10, [small("a"), small("a")], "unique"),
    (GB10, [small("a", weight_gib=3)], "weight_gib"),
    (GB10, [small("a", gpu_memory_utilization=0.95)], "gpu_memory_utilization"),
    (GB10, [small("a", gpu_memory_utilization=0.80), small("b", gpu_memory_utilization=0.40)], "above the ceiling"),
    (GB10, [small("a", gpu_memory_utilization=0.80), small("b")], "too little"),
])
def test_errors(facts, services, word):
    with pytest.raises(AnsibleFilterError, match=word):
        gpu_memory_utilization(facts, services, host="spark-1")


# The real size of the weights on disk (the model store's manifests) wins over the estimate.

def test_weights_on_disk_win_over_the_params_b_estimate():
    estimate = gpu_memory_utilization(GB10, [QWEN3_235B], host="spark-1")["services"]["qwen3-235b"]
    assert estimate["weights_from"] == "params_b"
    disk = 123 * 2 ** 30  # a checkpoint bigger than params_b x 0.53 says
    plan = gpu_memory_utilization(GB10, [QWEN3_235B], host="spark-1", weights_on_disk={"qwen3-235b": disk})
    svc = plan["services"]["qwen3-235b"]
    assert svc["weights_from"] == "disk"
    assert svc["weights_gib"] == 61.5  # per node: 123 GiB over TP 2
    assert svc["need_gib"] > estimate["need_gib"]


def test_weights_on_disk_win_over_weights_gib_and_only_for_their_service():
    plan = gpu_memory_utilization(GB10, [small("a"), small("b")], weights_on_disk={"a": 10 * 2 ** 30})
    assert (plan["services"]["a"]["weights_gib"], plan["services"]["a"]["weights_from"]) == (10.0, "disk")
    assert (plan["services"]["b"]["weights_gib"], plan["services"]["b"]["weights_from"]) == (30.0, "weights_gib")


def test_a_model_that_fits_by_its_estimate_but_not_by_its_files_is_refused_with_the_arithmetic():
    entry = small("big", weights_gib=None, params_b=100, checkpoint_format="fp8")  # ~93 GiB estimated
    gpu_memory_utilization(GB10, [entry], host="spark-1")
    with pytest.raises(AnsibleFilterError) as err:
        gpu_memory_utilization(GB10, [entry], host="spark-1", weights_on_disk={"big": 115 * 2 ** 30})
    text = str(err.value)
    assert "host spark-1: the services do not fit" in text
    assert "weights 115.00 on disk" in text


def test_an_entry_without_any_size_is_sized_by_its_files():
    entry = small("files", weights_gib=None)
    with pytest.raises(AnsibleFilterError):
        gpu_memory_utilization(GB10, [entry])
    plan = gpu_memory_utilization(GB10, [entry], weights_on_disk={"files": 5 * 2 ** 30})
    assert plan["services"]["files"]["weights_gib"] == 5.0


@pytest.mark.parametrize("bad", [["a"], {"a": "10 GiB"}, {"a": -1}, {"a": True}])
def test_weights_on_disk_of_a_wrong_shape_is_refused(bad):
    with pytest.raises(AnsibleFilterError, match="weights_on_disk must map service names to byte counts"):
        gpu_memory_utilization(GB10, [small("a")], weights_on_disk=bad)


def test_sized_from_what_cuda_reported_where_the_gate_recorded_it():
    """Seed 002: with nvidia modeset=0 CUDA saw about 62 GB of ~120 GB MemTotal. The 235B share that fits a
    whole Spark does not fit what CUDA sees, and the refusal says what it was sized from."""
    import copy
    facts = copy.deepcopy(GB10)
    facts["memory"]["cuda_total_bytes"] = 62 * 10 ** 9
    with pytest.raises(AnsibleFilterError, match="CUDA total 57.74 GiB"):
        gpu_memory_utilization(facts, [QWEN3_235B], host="spark-1")
    plan = gpu_memory_utilization(facts, [small("a")], host="spark-1")
    assert plan["sized_by"] == "CUDA total" and plan["mem_total_gib"] == 57.74
    assert gpu_memory_utilization(GB10, [small("a")])["sized_by"] == "MemTotal"


def test_the_utilization_limits_have_one_home_that_the_argv_and_the_split_share():
    """utilization_limits is where the default, the cap and the rule of an entry's --gpu-memory-utilization are
    chosen: vllm_args' check of an entry takes them from it, and so does the split's cap of each service."""
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import gpu_memory_utilization as gmu
    from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook, vllm_args
    long_len = rulebook.setting("long_context_threshold_tokens")
    plain = (rulebook.setting("gpu_memory_utilization_safe_max"), rulebook.setting("gpu_memory_utilization_ceiling"),
             "gpu_memory_utilization")
    long_cap = rulebook.setting("gpu_memory_utilization_long_context")
    assert gmu.utilization_limits(8192, 2) == plain
    assert gmu.utilization_limits(long_len, 1) == plain
    assert gmu.utilization_limits(long_len, 2) == (long_cap, long_cap, "long_context_multinode_utilization")
    for length, nodes in ((8192, 1), (long_len, 1), (long_len, 2), (None, 3)):
        assert vllm_args.default_utilization({"max_model_len": length}, {"nnodes": nodes}) == \
            gmu.utilization_limits(length, nodes)


@pytest.mark.parametrize("facts, entries, weights, expected", [
    (GB10, [small("a"), small("b", weights_gib=None, params_b=8)], {}, True),
    # the weights measured on disk size an entry the inventory did not size
    (GB10, [small("a", weights_gib=None)], {"a": 1 << 30}, True),
    (GB10, [small("a", weights_gib=None)], {"b": 1 << 30}, False),
    # a KV-cache key missing, no memory in the facts, nothing held
    (GB10, [small("a", head_dim=None)], {}, False),
    ({"memory": {}}, [small("a")], {}, False),
    ({}, [small("a")], {}, False),
    (GB10, [], {}, False),
])
def test_memory_sizable_is_the_plans_own_test(facts, entries, weights, expected):
    assert memory_sizable(facts, entries, weights) is expected
    assert sizable_filter.FilterModule().filters()["memory_sizable"] is memory_sizable
