# -*- coding: utf-8 -*-
"""vllm_metrics on a real /metrics recording (tests/fixtures/vllm, see its README)."""
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.vllm_metrics import FilterModule, vllm_metrics
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_metrics import samples

VLLM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "vllm")


def recording():
    with open(os.path.join(VLLM, "metrics-cpu-0.23.0-tiny.txt")) as handle:
        return handle.read()


def test_registered():
    assert set(FilterModule().filters()) == {"vllm_metrics"}


def test_real_recording():
    figures = vllm_metrics(recording())
    # Counted in prompt tokens looked up, over every request the sim served before the recording.
    assert figures["prefix_cache_queries"] == 427.0
    assert figures["prefix_cache_hits"] == 128.0  # one 128-token block of the repeated prompt, twice
    assert figures["prefix_cache_hit_rate"] == round(128.0 / 427.0, 3)
    assert figures["kv_cache_usage"] == 0.0
    assert figures["requests_running"] == 0.0 and figures["requests_waiting"] == 0.0


def test_created_timestamps_and_by_reason_series_are_not_summed_in():
    found = samples(recording())
    assert "vllm:prefix_cache_queries_created" in found  # present, but a different metric
    assert len(found["vllm:num_requests_waiting"]) == 1  # the by_reason series has its own name


def test_two_engines_are_summed_and_kv_usage_is_the_highest():
    text = "\n".join([
        '# TYPE vllm:prefix_cache_hits counter',
        'vllm:prefix_cache_hits_total{engine="0",model_name="a"} 30.0',
        'vllm:prefix_cache_hits_total{engine="1",model_name="a"} 10.0',
        'vllm:prefix_cache_queries_total{engine="0",model_name="a"} 50.0',
        'vllm:prefix_cache_queries_total{engine="1",model_name="a"} 30.0',
        'vllm:kv_cache_usage_perc{engine="0",model_name="a"} 0.25',
        'vllm:kv_cache_usage_perc{engine="1",model_name="a"} 0.75',
    ])
    figures = vllm_metrics(text)
    assert figures["prefix_cache_hit_rate"] == 0.5
    assert figures["kv_cache_usage"] == 0.75
    assert figures["requests_running"] is None


def test_no_queries_yet_is_no_rate():
    assert vllm_metrics("vllm:prefix_cache_queries_total{} 0.0\nvllm:prefix_cache_hits_total{} 0.0\n")[
        "prefix_cache_hit_rate"] is None


def test_not_vllm():
    with pytest.raises(AnsibleFilterError, match="no vllm: metric"):
        vllm_metrics("process_cpu_seconds_total 12.0\n")
