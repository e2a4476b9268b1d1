# -*- coding: utf-8 -*-
"""The decode roofline and the comparison with the field's figures (plugins/module_utils/roofline.py), on the
figures of 000_845b8fc6b18b9805.txt: Qwen3-235B-A22B GPTQ-Int4 on two Sparks (TP=2), 17.0 tok/s at concurrency 1,
24.1 and 36.4 summed at 2 and 4."""

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import roofline, rulebook

QWEN235 = {"name": "qwen3-235b", "model": "Qwen/Qwen3-235B-A22B-GPTQ-Int4", "checkpoint_format": "gptq",
           "params_b": 235, "active_params_b": 22, "moe": True, "tensor_parallel_size": 2,
           "num_layers": 94, "num_kv_heads": 4, "head_dim": 128, "kv_cache_dtype": "fp8"}
SEED = {1: 17.0, 2: 24.1, 4: 36.4}


def test_the_roofline_is_the_bandwidth_over_the_bytes_a_token_reads_on_one_node():
    bound = roofline.decode_roofline(QWEN235)
    # 22e9 active parameters x 0.53 bytes (GPTQ int4 with its scales) / 2 nodes = 5.83 GB a token on each node
    assert bound["weight_bytes"] == int(22e9 * 0.53 / 2)
    assert bound["tok_s"] == pytest.approx(273 / 5.83, abs=0.1)
    assert bound["bandwidth_gb_s"] == rulebook.setting("gb10_memory_bandwidth_gb_s") == 273


def test_the_kv_cache_read_lowers_it_and_pipeline_stages_do_not_raise_it():
    short = roofline.decode_roofline(QWEN235)["tok_s"]
    long_context = roofline.decode_roofline(QWEN235, context_tokens=32768)
    # fp8 KV: 2 x 94 layers x 4 heads x 128 x 1 byte x 32768 tokens = 3.15 GB, 1.58 GB on each node
    assert long_context["kv_bytes"] == int(2 * 94 * 4 * 128 * 32768 / 2)
    assert long_context["tok_s"] < short
    dense_pp = dict(QWEN235, tensor_parallel_size=1, pipeline_parallel_size=2)
    assert roofline.decode_roofline(dense_pp)["tok_s"] == pytest.approx(short / 2, abs=0.1)


def test_a_dense_entry_reads_all_its_parameters_and_an_unsized_one_has_no_bound():
    dense = {"model": "org/dense-8b", "checkpoint_format": "bf16", "params_b": 8}
    assert roofline.decode_roofline(dense)["tok_s"] == pytest.approx(273 / 16.0, abs=0.05)
    assert roofline.decode_roofline({"model": "org/unknown"}) is None


def test_the_seed_figures_read_against_the_roofline_and_themselves():
    rows = roofline.compare(QWEN235, SEED)
    assert [r["concurrency"] for r in rows] == [1, 2, 4]
    one, two, four = rows
    # 17.0 tok/s is about 36% of ~46.8: above the rule book's 20%, no warning
    assert one["roofline_share"] == pytest.approx(17.0 / one["roofline_tok_s"], abs=0.001)
    assert 0.3 < one["roofline_share"] < 0.4 and one["warning"] is None
    # per stream at 2 and 4: 12.05 and 9.1, as the seed's per-request column says
    assert (two["per_stream_tok_s"], four["per_stream_tok_s"]) == (12.05, 9.1)
    assert [r["published"] for r in rows] == [[17.0, 17.0], [24.1, 24.1], [36.4, 36.4]]
    assert [r["published_share"] for r in rows] == [1.0, 1.0, 1.0]
    # no warning beyond concurrency 1, where a MoE batch reads more experts than one stream
    assert two["warning"] is None and four["warning"] is None


def test_a_slow_single_stream_is_warned_about_with_the_arithmetic():
    rows = roofline.compare(QWEN235, {"1": 6.0, "4": 20.0})
    assert "6.0 tok/s is 13% of the decode roofline 46.8 tok/s" in rows[0]["warning"]
    assert "below the rule book's 20%" in rows[0]["warning"]
    assert rows[0]["published_share"] == pytest.approx(6.0 / 17.0, abs=0.001)
    assert rows[1]["warning"] is None


def test_a_published_figure_is_matched_by_model_and_tensor_parallel_size():
    assert roofline.published(QWEN235)["source"] == "000_845b8fc6b18b9805.txt"
    assert roofline.published(dict(QWEN235, tensor_parallel_size=1)) is None
    gpt = {"model": "openai/gpt-oss-120b", "checkpoint_format": "mxfp4", "active_params_b": 5.1}
    row = roofline.compare(gpt, {1: 40.0})[0]
    assert row["published"] == [32.0, 60.0] and row["published_share"] == pytest.approx(1.25)
    assert row["roofline_tok_s"] == pytest.approx(273 / (5.1 * 0.53125), abs=0.1)


def test_every_published_figure_lies_under_its_roofline():
    """A figure above the bound would mean the active parameters or the format in the table are wrong."""
    for figure in rulebook.setting("published_figures"):
        bound = roofline.decode_roofline(figure)["tok_s"]
        for concurrency, value in figure["output_tok_s"].items():
            high = value[1] if isinstance(value, list) else value
            assert high / int(concurrency) <= bound, (figure["model"], concurrency)
