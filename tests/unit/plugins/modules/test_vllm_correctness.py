# -*- coding: utf-8 -*-
"""vllm_correctness (the logic in module_utils/vllm_correctness.py, shared with vllm_verify): known answers judged
as whole words, the same greedy prompt twice, and the module itself run by ansible-playbook against a real HTTP
server on 127.0.0.1 that answers 200 (right, garbage, or differently the second time)."""

import json

import pytest

from ansible_local import kept_result  # tests/unit/ansible_local.py
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook
from ansible_collections.sparkfleet.gb10.plugins.module_utils import vllm_correctness as vc

KNOWN = rulebook.setting("known_answers")
NEED = rulebook.setting("known_answers_min_correct")
PROMPT = rulebook.setting("determinism_prompt")
# Fluent, grammatical and wrong: what the CUTLASS FP4 MoE path answers on SM121, with a 200.
GARBAGE = " a quiet river that runs north through the valley, where the old mill stands beside the bridge"


# ------------------------------------------------------------------ pure judging
@pytest.mark.parametrize("text, word, found", [
    (" Paris.", "Paris", True),
    (" paris, the city of light", "Paris", True),
    ("\nPARIS", "Paris", True),
    (" Parisian bakeries", "Paris", False),
    (" the symbol is Au (aurum)", "Au", True),
    (' "Au".', "Au", True),
    (" Australia and Austria", "Au", False),
    (" gold", "Au", False),
    (" cold as ice", "cold", True),
    (" colder than ice", "cold", False),
    (" 2 + 2 = 4.", "4", True),
    (" 44", "4", False),
    (" Zürich", "Zürich", True),
    (" anything", "", False),
    ("", "Paris", False),
])
def test_an_accepted_word_counts_only_as_a_whole_word_in_any_case(text, word, found):
    assert vc.has_word(text, word) is found


def test_the_first_accepted_word_found_is_named():
    assert vc.matched_word(" four, or 4", ["4", "four"]) == "4"
    assert vc.matched_word(" four", ["4", "four"]) == "four"
    assert vc.matched_word(GARBAGE, ["4", "four"]) is None
    assert vc.matched_word(" x", []) is None


@pytest.mark.parametrize("body, text, tokens", [
    (json.dumps({"choices": [{"text": " Paris"}], "usage": {"completion_tokens": 2}}), " Paris", 2),
    (json.dumps({"choices": [{"text": " Paris"}], "usage": {"completion_tokens": 2}}).encode(), " Paris", 2),
    (json.dumps({"choices": [], "usage": {}}), "", 0),
    (json.dumps({"error": "model not found"}), "", 0),
    ("not json", "", 0),
    ("", "", 0),
    (json.dumps({"choices": [{"text": None}], "usage": {"completion_tokens": "x"}}), "", 0),
])
def test_an_answer_is_read_from_whatever_came_back(body, text, tokens):
    assert vc.read_answer(200, body) == {"status": 200, "text": text, "completion_tokens": tokens}


def test_same_twice_needs_the_same_text_and_token_count():
    one = {"text": " four five", "completion_tokens": 8}
    assert vc.same_twice(one, dict(one))
    assert not vc.same_twice(one, dict(one, text=" four six"))
    assert not vc.same_twice(one, dict(one, completion_tokens=7))


def test_shorten_keeps_one_line_and_says_it_cut():
    assert vc.shorten(" Paris\n\nis") == '"Paris is"'
    long = vc.shorten("word " * 100, limit=20)
    assert len(json.loads(long)) == 20 and long.endswith('..."')


def test_two_answers_are_shown_where_they_part():
    assert vc.shown_pair(" four five six", " four five seven") == ('"four five six"', '"four five seven"')
    first, second = vc.shown_pair(GARBAGE + " alpha", GARBAGE + " omega")
    assert first.endswith('alpha"') and second.endswith('omega"') and first.startswith('"...')
    assert len(json.loads(first)) <= vc.SHOWN_CHARS


@pytest.mark.parametrize("known, need, wrong", [
    (KNOWN, NEED, None),
    (KNOWN, None, None),
    ([], None, None),
    ([], 5, None),
    (KNOWN, 0, "min_correct=0"),
    (KNOWN, len(KNOWN) + 1, "min_correct=%d" % (len(KNOWN) + 1)),
    ([{"prompt": " ", "expect": ["x"]}], 1, "empty prompt"),
    ([{"prompt": "p", "expect": [" "]}], 1, "no accepted word"),
])
def test_the_inputs_are_checked(known, need, wrong):
    found = vc.check_inputs(known, need)
    assert (found is None) if wrong is None else (wrong in found)


def _asker(answer_of):
    """An ``ask`` for :func:`vc.gate` from ``answer_of(prompt, nth)`` -> text (nth: 0 the first time a prompt is
    asked); it records every ask."""
    calls = []

    def ask(prompt, max_tokens):
        nth = sum(1 for p, _t in calls if p == prompt)
        calls.append((prompt, max_tokens))
        text = answer_of(prompt, nth)
        if isinstance(text, dict):
            return text
        return {"status": 200, "text": text, "completion_tokens": max(1, len(text.split()))}
    ask.calls = calls
    return ask


def _right(prompt, _nth):
    for item in KNOWN:
        if item["prompt"] == prompt:
            return " %s, as every textbook says." % item["expect"][0]
    return " four five six seven"


def _gate(ask, known=KNOWN, need=NEED):
    return vc.gate(ask, known, need, 16, PROMPT, 8)


def test_a_model_that_knows_passes_and_asks_each_prompt_once_and_the_determinism_prompt_twice():
    ask = _asker(_right)
    result, failure = _gate(ask)
    assert failure is None
    assert result["form"] == "known-answers" and result["correct"] == len(KNOWN) and result["deterministic"]
    assert result["summary"] == "answers %d/%d" % (len(KNOWN), len(KNOWN))
    assert [r["matched"] for r in result["answers"]] == [item["expect"][0] for item in KNOWN]
    assert ask.calls == [(item["prompt"], 16) for item in KNOWN] + [(PROMPT, 8), (PROMPT, 8)]


def test_fluent_garbage_fails_showing_each_prompt_its_answer_what_was_expected_and_the_fix():
    result, failure = _gate(_asker(lambda prompt, nth: GARBAGE))
    assert result["correct"] == 0 and result["deterministic"]
    assert failure.startswith("answered 0 of %d known-answer prompts right, fewer than the %d required"
                              % (len(KNOWN), NEED))
    for item in KNOWN:
        assert "WRONG %s -> %s" % (vc.shorten(item["prompt"]), vc.shorten(GARBAGE)) in failure
        assert "expected %s" % " or ".join(item["expect"]) in failure
    for words in ("rule moe_backend", "CUTLASS FP4", "--moe-backend marlin", "rule quantization_loader",
                  "VLLM_USE_FLASHINFER_MOE_FP4=0", "correctness_check: false", "correctness_check_off_reason"):
        assert words in failure, words
    assert "two different answers" not in failure


def test_one_odd_phrasing_is_forgiven_but_not_two():
    odd = KNOWN[0]["prompt"]
    result, failure = _gate(_asker(lambda prompt, nth: " a question" if prompt == odd else _right(prompt, nth)))
    assert failure is None and result["correct"] == len(KNOWN) - 1 >= NEED
    odd2 = KNOWN[1]["prompt"]
    result, failure = _gate(_asker(lambda prompt, nth: " a question" if prompt in (odd, odd2)
                                   else _right(prompt, nth)))
    assert result["correct"] == len(KNOWN) - 2 < NEED and "right %s" % vc.shorten(KNOWN[2]["prompt"]) in failure


def test_a_second_answer_that_differs_fails_the_determinism_check():
    result, failure = _gate(_asker(lambda prompt, nth: " four five six" if nth == 0 or prompt != PROMPT
                                   else " four five seven"))
    assert result["deterministic"] is False and result["determinism"]["answers"] == [" four five six",
                                                                                     " four five seven"]
    assert "gave two different answers to the same greedy prompt" in failure and result["summary"] == "answers differ"
    assert 'first  -> "four five six"' in failure and 'second -> "four five seven"' in failure
    assert "VLLM_MARLIN_USE_ATOMIC_ADD=1" in failure and "idle" in failure
    # the known answers were wrong too ("four five six" is no capital): both are reported
    assert "known-answer prompts right" in failure


def test_without_known_answers_only_the_determinism_ask_runs():
    ask = _asker(lambda prompt, nth: GARBAGE)
    result, failure = _gate(ask, known=[], need=None)
    assert failure is None and result["form"] == "determinism" and result["summary"] == "same twice"
    assert result["min_correct"] == 0 and result["answers"] == [] and ask.calls == [(PROMPT, 8), (PROMPT, 8)]
    result, failure = _gate(_asker(lambda prompt, nth: GARBAGE + str(nth)), known=[], need=None)
    assert result["deterministic"] is False and "two different answers" in failure
    assert "correctness_check_off_reason" not in failure  # nothing to turn off: only the determinism ask ran


@pytest.mark.parametrize("answer, words", [
    ({"status": 503, "text": "", "completion_tokens": 0, "error": "Service Unavailable"}, "answered 503 to"),
    ({"status": 200, "text": "", "completion_tokens": 0}, "answered 200 without completion tokens"),
])
def test_an_endpoint_that_does_not_answer_stops_the_gate_at_once(answer, words):
    ask = _asker(lambda prompt, nth: answer)
    _result, failure = _gate(ask)
    assert failure.startswith(words) and len(ask.calls) == 1


# ------------------------------------------------------------------ the module against a real HTTP server
KEY = "sk-verify-not-for-printing"


@pytest.fixture()
def answering(serve_vllm):
    """answering(answer_of=_right) -> (handler, /v1/completions URL) of a stand-in vLLM (tests/unit/fake_vllm.py)
    that answers 200 with the text ``answer_of(prompt, nth)`` gives, keeps every request body and refuses a
    missing or wrong key."""

    def start(answer_of=_right):
        handler, url = serve_vllm(key=KEY, complete=lambda body, nth: answer_of(body["prompt"], nth))
        return handler, url + "/v1/completions"
    return start


# The settings come from the rule book through the lookup, as roles/fleet_verify/tasks/endpoints.yml passes them.
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Ask the endpoint the known answers and the determinism prompt
      sparkfleet.gb10.vllm_correctness:
        url: "{{ url }}"
        model: tiny-tp
        api_key: "{{ key }}"
        timeout: 30
        known_answers: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers') if known | bool else [] }}"
        min_correct: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers_min_correct') }}"
        max_tokens: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers_max_tokens') }}"
        determinism_prompt: "{{ lookup('sparkfleet.gb10.rulebook', 'determinism_prompt') }}"
        determinism_max_tokens: "{{ lookup('sparkfleet.gb10.rulebook', 'determinism_max_tokens') }}"
      register: __correctness
      ignore_errors: true

    - name: Keep the result
      ansible.builtin.copy:
        content: "{{ __correctness | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
"""


def _module(tmp_path, url, known=True, key=KEY):
    return kept_result(tmp_path, PLAY, {"url": url, "known": str(known), "key": key}, KEY)[1]  # api_key is no_log


def test_module_passes_an_endpoint_that_answers_the_expected_words(tmp_path, answering):
    vllm, url = answering()
    result = _module(tmp_path, url)
    assert not result.get("failed"), result.get("msg")
    assert result["form"] == "known-answers" and result["correct"] == len(KNOWN) and result["deterministic"]
    assert result["summary"] == "answers %d/%d" % (len(KNOWN), len(KNOWN)) and result["changed"] is False
    # greedy, each known prompt once with its max_tokens, then the determinism prompt twice
    assert [(r["prompt"], r["max_tokens"], r["temperature"], r["model"]) for r in vllm.requests] == \
        [(item["prompt"], rulebook.setting("known_answers_max_tokens"), 0, "tiny-tp") for item in KNOWN] + \
        [(PROMPT, rulebook.setting("determinism_max_tokens"), 0, "tiny-tp")] * 2


def test_module_fails_an_endpoint_that_answers_fluent_garbage_with_200(tmp_path, answering):
    _vllm, url = answering(lambda prompt, nth: GARBAGE)
    result = _module(tmp_path, url)
    assert result["failed"] is True and result["correct"] == 0 and result["deterministic"] is True
    assert result["msg"].startswith("%s (model tiny-tp) answered 0 of %d known-answer prompts right" % (
        url, len(KNOWN)))
    assert "rule moe_backend" in result["msg"] and vc.shorten(KNOWN[0]["prompt"]) in result["msg"]


def test_module_fails_an_endpoint_that_answers_differently_the_second_time(tmp_path, answering):
    _vllm, url = answering(lambda prompt, nth: _right(prompt, nth) + (" eight" if nth else ""))
    result = _module(tmp_path, url)
    assert result["failed"] is True and result["correct"] == len(KNOWN) and result["deterministic"] is False
    assert "two different answers to the same greedy prompt" in result["msg"]
    assert "known-answer prompts right" not in result["msg"]


def test_module_without_known_answers_asks_only_the_determinism_prompt(tmp_path, answering):
    vllm, url = answering(lambda prompt, nth: GARBAGE)
    result = _module(tmp_path, url, known=False)
    assert not result.get("failed"), result.get("msg")
    assert result["form"] == "determinism" and result["summary"] == "same twice"
    assert [r["prompt"] for r in vllm.requests] == [PROMPT, PROMPT]


def test_module_fails_naming_the_status_when_the_key_is_refused(tmp_path, answering):
    vllm, url = answering()
    result = _module(tmp_path, url, key="sk-wrong-key")
    assert result["failed"] is True and "answered 401 to" in result["msg"] and vllm.requests == []
