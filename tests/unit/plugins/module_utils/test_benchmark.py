# -*- coding: utf-8 -*-
"""The benchmark stage's arithmetic and reading: the argv of a run, a point read from a real result file of the
pinned release's `vllm bench serve` (tests/fixtures/vllm_bench/, recorded on the simulation's CPU build of
vLLM 0.19.0), the summary against the seed's Qwen3-235B figures, the fleet table's headline and the report."""

from __future__ import annotations

import copy
import json
import os
import time

import pytest

from ansible_collections.sparkfleet.gb10.plugins.filter import benchmark as bench_filters
from ansible_collections.sparkfleet.gb10.plugins.module_utils import benchmark

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
RECORDED = os.path.join(REPO, "tests", "fixtures", "vllm_bench")
SETTINGS = {"input_len": 256, "output_len": 128, "rounds": 4, "min_prompts": 8, "seed": 0}
ENDPOINT = {"name": "qwen3", "call_address": "127.0.0.1", "port": 8000, "served_name": "qwen3-235b",
            "tokenizer": "/var/lib/sparkfleet/models/qwen3", "trust_remote_code": False}
QWEN = {"name": "qwen3", "model": "Qwen/Qwen3-235B-A22B-GPTQ-Int4", "checkpoint_format": "gptq", "params_b": 235,
        "active_params_b": 22, "moe": True, "tensor_parallel_size": 2, "num_layers": 94, "num_kv_heads": 4,
        "head_dim": 128, "kv_cache_dtype": "fp8"}


def recorded(concurrency):
    with open(os.path.join(RECORDED, "tiny-tp-c%d.json" % concurrency)) as handle:
        return json.load(handle)


def _point(concurrency, tok_s):
    return {"concurrency": concurrency, "num_prompts": 8, "completed": 8, "failed": 0, "output_tok_s": tok_s,
            "request_s": 1.0, "error": None, "ttft_p50_ms": 100.0, "ttft_p99_ms": 200.0, "itl_p50_ms": 50.0,
            "itl_p99_ms": 80.0}


def test_the_argv_runs_one_point_of_the_sweep_without_the_key():
    argv = benchmark.bench_argv("/opt/sparkfleet/venv/bin/vllm", ENDPOINT, 4, SETTINGS, "/var/lib/sparkfleet/benchmark")
    assert argv[:3] == ["/opt/sparkfleet/venv/bin/vllm", "bench", "serve"]
    value = {flag: argv[i + 1] for i, flag in enumerate(argv[:-1]) if flag.startswith("--")}
    assert value["--max-concurrency"] == "4" and value["--num-prompts"] == "16"
    assert value["--base-url"] == "http://127.0.0.1:8000" and value["--model"] == "qwen3-235b"
    assert value["--tokenizer"] == "/var/lib/sparkfleet/models/qwen3"
    assert value["--result-filename"] == "qwen3-c4.json" and "--ignore-eos" in argv and "--save-result" in argv
    assert "--trust-remote-code" not in argv
    assert "--trust-remote-code" in benchmark.bench_argv("vllm", dict(ENDPOINT, trust_remote_code=True), 1, SETTINGS, "/d")


@pytest.mark.parametrize("concurrency, rounds, minimum, expected", [(1, 4, 8, 8), (2, 4, 8, 8), (8, 4, 8, 32),
                                                                    (3, 1, 1, 3)])
def test_requests_of_a_run_are_rounds_of_its_concurrency(concurrency, rounds, minimum, expected):
    assert benchmark.num_prompts(concurrency, rounds, minimum) == expected


def test_the_tokenizer_is_read_where_the_host_has_it():
    store = "/var/lib/sparkfleet/models"
    assert benchmark.tokenizer_of({"name": "a", "model": "org/a", "tokenizer": "org/tok"}, store) == "org/tok"
    assert benchmark.tokenizer_of({"name": "a", "model": "org/a", "source": {"type": "hf"}}, store) == store + "/a"
    assert benchmark.tokenizer_of({"name": "a", "model": "/opt/models/a"}, store) == "/opt/models/a"


@pytest.mark.parametrize("concurrency", [1, 2, 4, 8])
def test_a_point_is_read_from_the_releases_own_result_file(concurrency):
    raw = recorded(concurrency)
    point = benchmark.point(raw)
    assert point["concurrency"] == concurrency == raw["max_concurrency"]
    assert point["completed"] == point["num_prompts"] == raw["num_prompts"] and point["failed"] == 0
    assert point["output_tok_s"] == round(raw["output_throughput"], 3) > 0
    assert point["request_s"] == round(raw["request_throughput"], 3) > 0
    assert point["output_len"] == SETTINGS["output_len"]  # --ignore-eos: every request generated all its tokens
    for key in ("ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p99_ms", "e2el_p99_ms"):
        assert isinstance(point[key], float) and point[key] > 0, key
    assert point["ttft_p50_ms"] <= point["ttft_p99_ms"]
    assert benchmark.failures([point]) == []


def test_a_run_that_lost_requests_is_a_failure_with_its_first_error():
    raw = copy.deepcopy(recorded(2))
    raw.update(completed=raw["num_prompts"] - 2, failed=2, errors=["", "Bad Request: prompt too long"] + [""] * 6)
    point = benchmark.point(raw)
    assert benchmark.failures([point]) == ["concurrency 2: 2 of %d requests failed (first error: Bad Request: prompt "
                                           "too long)" % raw["num_prompts"]]


@pytest.mark.parametrize("points, expected", [
    ([_point(1, 17.0), _point(2, 24.1), _point(4, 36.4)], "17.0@c1 36.4@c4"),
    ([_point(1, 30.0), _point(8, 12.0)], "30.0@c1"),
    ([_point(2, 5.0)], "5.0@c2"),
    ([], "-"),
])
def test_the_headline_is_the_lowest_concurrency_and_the_best(points, expected):
    assert benchmark.headline(points) == expected


def test_the_seed_figures_read_as_the_published_ones():
    """Measured = the seed's Qwen3-235B GPTQ-Int4 TP=2 figures: each is 100% of the published one, concurrency 1
    sits at about a third of the roofline (no warning), and per stream falls as concurrency rises."""
    points = [_point(1, 17.0), _point(2, 24.1), _point(4, 36.4)]
    summary = benchmark.summary("qwen3", QWEN, points, compare=True, context_tokens=256 + 64, host="spark-1")
    assert [r["published_share"] for r in summary["rows"]] == [1.0, 1.0, 1.0]
    assert [r["published"] for r in summary["rows"]] == [[17.0, 17.0], [24.1, 24.1], [36.4, 36.4]]
    first = summary["rows"][0]
    assert 40 < first["roofline_tok_s"] < 50 and 0.3 < first["roofline_share"] < 0.45
    assert summary["warnings"] == [] and summary["failures"] == [] and not summary["simulated"]
    assert summary["headline"] == "17.0@c1 36.4@c4" and summary["published"]["source"].startswith("000_")


def test_a_slow_single_stream_warns_and_the_simulation_is_not_compared():
    slow = benchmark.summary("qwen3", QWEN, [_point(1, 5.0)], compare=True)
    assert len(slow["warnings"]) == 1 and "decode_roofline" in slow["warnings"][0]
    simulated = benchmark.summary("qwen3", QWEN, [_point(1, 5.0)], compare=False)
    assert simulated["simulated"] and simulated["rows"] is None and simulated["warnings"] == []
    assert simulated["published"] is None


def test_the_report_holds_every_point_and_the_comparison():
    summary = benchmark.summary("qwen3", QWEN, [_point(1, 17.0), _point(4, 36.4)], compare=True, host="spark-1")
    text = benchmark.markdown([summary], title="Benchmark of two-spark", settings=SETTINGS, chart="tok_s.png")
    lines = text.splitlines()
    assert lines[0] == "# Benchmark of two-spark" and "![output tok/s against concurrency](tok_s.png)" in lines
    rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert [r.split("|")[1].strip() for r in rows] == ["1", "4"]
    assert rows[0].split("|")[2].strip() == "17.0" and rows[0].split("|")[9].strip() == "17.0"
    assert rows[1].split("|")[10].strip() == "100%"
    assert "roofline share" in text and "source 000_" in text


def test_the_report_labels_simulated_figures_and_compares_nothing():
    summary = benchmark.summary("tiny-tp", {"name": "tiny-tp", "model": "/opt/models/tiny-llama"},
                                [benchmark.point(recorded(c)) for c in (1, 2)], compare=False, host="spark-1")
    text = benchmark.markdown([summary])
    assert benchmark.SIMULATED in text and "roofline share" not in text and "Published" not in text


def test_a_moe_entry_without_its_active_parameters_has_no_roofline():
    """Its total parameters would put the bound several times too low (the seed's 17.0 tok/s read as 386%)."""
    no_active = {k: v for k, v in QWEN.items() if k != "active_params_b"}
    summary = benchmark.summary("qwen3", no_active, [_point(1, 17.0)], compare=True)
    assert summary["roofline_tok_s"] is None and summary["rows"][0]["roofline_share"] is None
    assert "Decode roofline: unknown" in benchmark.markdown([summary])


def test_a_figure_above_the_roofline_says_the_entry_is_wrong():
    dense = {"name": "d", "model": "org/dense-8b", "checkpoint_format": "bf16", "params_b": 8}
    summary = benchmark.summary("d", dense, [_point(1, 40.0)], compare=True)
    assert summary["rows"][0]["roofline_share"] > 1
    assert len(summary["warnings"]) == 1 and "sizes are wrong" in summary["warnings"][0]


def test_the_runs_printed_errors_are_the_points_error():
    raw = copy.deepcopy(recorded(1))
    raw.update(completed=raw["num_prompts"] - 1, failed=1)
    point = benchmark.point(raw, errors=["Error 0: Internal Server Error"])
    assert point["error"] == "Error 0: Internal Server Error"
    assert "first error: Error 0: Internal Server Error" in benchmark.failures([point])[0]


def test_each_run_has_its_own_seed_and_warms_up_unmeasured():
    argvs = [benchmark.bench_argv("vllm", ENDPOINT, c, dict(SETTINGS, seed=100), "/d") for c in (1, 2)]
    seeds = [a[a.index("--seed") + 1] for a in argvs]
    assert seeds == ["101", "102"]
    assert [a[a.index("--num-warmups") + 1] for a in argvs] == ["1", "2"]


# ---------------------------------------------------------------- the sweep the role runs (roles/fleet_benchmark/vars)
@pytest.mark.parametrize("value, expected", [([1, 2, 4, 8], [1, 2, 4, 8]), (["2", 3], [2, 3]), ("1,4", [1, 4]),
                                             ("16", [16]), ("[1, 4, 16]", [1, 4, 16]), ("", [])])
def test_the_concurrencies_of_a_list_or_of_text_naming_one(value, expected):
    assert benchmark.concurrencies(value) == expected
    assert bench_filters.FilterModule().filters()["benchmark_concurrency"](value) == expected


@pytest.mark.parametrize("value, expected", [
    (["qwen3", "x"], ["qwen3", "x"]), ([], []), ("", []), ("qwen3", ["qwen3"]),
    ("qwen3,llama-70b tiny_tp.v2", ["qwen3", "llama-70b", "tiny_tp.v2"]), ("['qwen3', 'gpt-oss']", ["qwen3", "gpt-oss"])])
def test_the_models_of_a_list_or_of_text_naming_one(value, expected):
    assert bench_filters.FilterModule().filters()["benchmark_models"](value) == expected


def test_the_endpoints_benchmarked_are_those_named_else_all():
    endpoints = [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    select = bench_filters.FilterModule().filters()["benchmark_endpoints"]
    assert select(endpoints, []) == endpoints
    assert select(endpoints, ["c", "a", "gone"]) == [{"name": "a"}, {"name": "c"}]
    assert select(endpoints, ["gone"]) == []


def test_the_sweep_settings_are_integers_and_a_zero_seed_is_the_time_of_day():
    values = {"input_len": "512", "output_len": 64, "rounds": 2.0, "min_prompts": "8", "seed": "42",
              "concurrency": [1], "venv_path": "/v"}
    assert bench_filters.FilterModule().filters()["benchmark_settings"](values) == {
        "input_len": 512, "output_len": 64, "rounds": 2, "min_prompts": 8, "seed": 42}
    clock = time.strptime("2026-11-28 07:05:09", "%Y-%m-%d %H:%M:%S")
    assert benchmark.sweep_settings(dict(values, seed=0), clock=lambda: clock)["seed"] == 70509
    # each reading: the time now (UTC)
    before = int(time.strftime("%H%M%S", time.gmtime()))
    seed = bench_filters.FilterModule().filters()["benchmark_settings"](dict(values, seed="0"))["seed"]
    after = int(time.strftime("%H%M%S", time.gmtime()))
    assert (before <= seed <= after) if before <= after else (seed >= before or seed <= after)  # midnight between
