# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Is a vLLM endpoint right, not only up: known answers judged as whole words, and one greedy prompt twice.

Shared by the modules that judge an endpoint's answers: ``vllm_correctness`` (one endpoint) and ``vllm_verify``
(every endpoint of a host at once, the endpoint gate of fleet_verify). A model whose kernels compute garbage still
answers HTTP 200 with fluent text (CUTLASS FP4 MoE on SM121, rule ``moe_backend``); :func:`gate` asks and judges,
through an ``ask(prompt, max_tokens)`` the module gives it, so the HTTP stays the module's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_answer import completion_request, request, summarise

FORMS = ("known-answers", "determinism")
SHOWN_CHARS = 80

CAUSES = (
    "Likely causes, most likely first: MoE experts on the CUTLASS FP4 kernels, broken on SM121 (rule moe_backend: "
    "--moe-backend marlin for quantized weights; rule flashinfer_moe_fp4_off: VLLM_USE_FLASHINFER_MOE_FP4=0), a "
    "quantization loader that does not match the checkpoint (rule quantization_loader: the entry's "
    "checkpoint_format, and no quantization override), or Marlin without VLLM_MARLIN_USE_ATOMIC_ADD=1 (rule "
    "marlin_atomic_add). Fix: compare the unit's command line and environment (systemctl cat "
    "sparkfleet-vllm-<name>) with docs/rules.md, correct the entry or the environment override, restart the "
    "service and run playbooks/verify.yml again.")
OFF_HINT = ("A model that cannot know these answers (random test weights) sets correctness_check: false with "
            "correctness_check_off_reason in its entry; the determinism ask still runs.")
BUSY_HINT = ("Requests of other clients batched with these asks may round differently: if the endpoint was busy, "
             "run playbooks/verify.yml again when it is idle.")


def gate_options():
    """The argument spec of the gate's options, as sparkfleet.gb10.vllm_correctness and vllm_verify take them
    (documented once: the doc fragment sparkfleet.gb10.vllm_correctness)."""
    return dict(
        known_answers=dict(type="list", elements="dict", default=[], options=dict(
            prompt=dict(type="str", required=True),
            expect=dict(type="list", elements="str", required=True),
        )),
        min_correct=dict(type="int"),
        determinism_prompt=dict(type="str", required=True),
        determinism_max_tokens=dict(type="int", default=8, no_log=False),
    )


def shorten(text, limit=SHOWN_CHARS):
    """An answer as a message shows it: on one line, at most ``limit`` characters, quoted."""
    flat = " ".join(str(text).split())
    if len(flat) > limit:
        flat = flat[:limit - 3] + "..."
    return json.dumps(flat, ensure_ascii=False)


def shown_pair(first, second, limit=SHOWN_CHARS):
    """Two answers as a message shows them: where they part, when it lies beyond what one line shows."""
    first, second = " ".join(str(first).split()), " ".join(str(second).split())
    same = 0
    while same < min(len(first), len(second)) and first[same] == second[same]:
        same += 1
    start = max(0, same - limit // 2) if same > limit - 20 else 0
    if start:
        return shorten("..." + first[start:], limit), shorten("..." + second[start:], limit)
    return shorten(first, limit), shorten(second, limit)


def has_word(text, word):
    """True when ``word`` is in ``text`` as a whole word, in any case ('Au' in 'is Au.', not in 'Australia')."""
    word = str(word).strip()
    if not word:
        return False
    pattern = r"(?<!\w)%s(?!\w)" % re.escape(word)
    return re.search(pattern, str(text), re.IGNORECASE | re.UNICODE) is not None


def matched_word(text, expect):
    """The first accepted word ``text`` holds, None when it holds none."""
    for word in expect or []:
        if has_word(text, word):
            return word
    return None


def read_answer(status, body):
    """``{status, text, completion_tokens}`` of a /v1/completions answer (raw body, str or bytes), as
    :func:`vllm_answer.summarise` reads it."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    summary = summarise(status, 0, body)
    return {"status": status, "text": summary["text"], "completion_tokens": summary["completion_tokens"]}


def asker(url, model, api_key, timeout):
    """The ``ask(prompt, max_tokens)`` of :func:`gate` for the completions URL ``url``: one greedy request
    (:func:`vllm_answer.completion_request`, the key as a bearer token), read by :func:`read_answer`, with the
    reason (``error``) when it is not 200."""

    def ask(prompt, max_tokens):
        headers, payload = completion_request(model, prompt, max_tokens, api_key)
        status, body, error = request(url, data=payload, headers=headers, timeout=timeout)
        answer = read_answer(status, body)
        if status != 200:
            answer["error"] = error
        return answer
    return ask


def judge_known_answers(known_answers, answers):
    """One result per known answer, each with what came back and whether it is right."""
    results = []
    for item, answer in zip(known_answers, answers):
        word = matched_word(answer["text"], item["expect"])
        results.append({"prompt": item["prompt"], "expect": list(item["expect"]), "answer": answer["text"],
                        "completion_tokens": answer["completion_tokens"], "correct": word is not None,
                        "matched": word})
    return results


def same_twice(first, second):
    """Whether two answers to one greedy prompt agree: the same text and the same number of completion tokens."""
    return first["text"] == second["text"] and first["completion_tokens"] == second["completion_tokens"]


def summary_text(form, correct, asked, deterministic):
    """The fleet table's word on the endpoint."""
    if not deterministic:
        return "answers differ"
    if form == "determinism":
        return "same twice"
    return "answers %d/%d" % (correct, asked)


def check_inputs(known_answers, min_correct):
    """What is wrong with the module's own inputs (None when nothing): the rule book's settings as passed."""
    for index, item in enumerate(known_answers):
        if not str(item.get("prompt") or "").strip():
            return "known_answers[%d]: empty prompt" % index
        if not [w for w in item.get("expect") or [] if str(w).strip()]:
            return "known_answers[%d] (%s): no accepted word in expect" % (index, item["prompt"])
    if known_answers and min_correct is not None and not 1 <= min_correct <= len(known_answers):
        return "min_correct=%d: must be 1 to %d, the number of known answers" % (min_correct, len(known_answers))
    return None


def gate(ask, known_answers, min_correct, max_tokens, determinism_prompt, determinism_max_tokens):
    """Ask and judge. ``ask(prompt, max_tokens)`` returns :func:`read_answer`'s dict; an answer that is not 200
    with completion tokens stops the gate (the endpoint is broken, not wrong).

    Returns ``(result, failure)``: the module's result and the message to fail with (None when it passed)."""
    form = FORMS[0] if known_answers else FORMS[1]
    need = (len(known_answers) if min_correct is None else min_correct) if known_answers else 0
    result = {"form": form, "answers": [], "correct": 0, "min_correct": need, "deterministic": False,
              "determinism": {"prompt": determinism_prompt, "answers": [], "completion_tokens": []}, "summary": ""}

    def asked(prompt, tokens):
        answer = ask(prompt, tokens)
        if answer["status"] != 200:
            return answer, "answered %s to %s (max_tokens %d)%s" % (
                answer["status"], shorten(prompt), tokens, ": %s" % answer["error"] if answer.get("error") else "")
        if answer["completion_tokens"] <= 0:
            return answer, "answered 200 without completion tokens to %s (max_tokens %d)" % (shorten(prompt), tokens)
        return answer, None

    answers = []
    for item in known_answers:
        answer, broken = asked(item["prompt"], max_tokens)
        if broken:
            return result, broken
        answers.append(answer)
    result["answers"] = judge_known_answers(known_answers, answers)
    result["correct"] = sum(1 for r in result["answers"] if r["correct"])

    twice = []
    for _time in range(2):
        answer, broken = asked(determinism_prompt, determinism_max_tokens)
        if broken:
            return result, broken
        twice.append(answer)
    result["determinism"]["answers"] = [a["text"] for a in twice]
    result["determinism"]["completion_tokens"] = [a["completion_tokens"] for a in twice]
    result["deterministic"] = same_twice(twice[0], twice[1])
    result["summary"] = summary_text(form, result["correct"], len(known_answers), result["deterministic"])

    problems = []
    if result["correct"] < need:
        lines = ["answered %d of %d known-answer prompts right, fewer than the %d required (rule known_answers): "
                 "it answers, but wrong." % (result["correct"], len(known_answers), need)]
        for item in result["answers"]:
            lines.append("  %s %s -> %s (%d tokens); expected %s" % (
                "right" if item["correct"] else "WRONG", shorten(item["prompt"]), shorten(item["answer"]),
                item["completion_tokens"], " or ".join(item["expect"])))
        problems.append("\n".join(lines))
    if not result["deterministic"]:
        shown = shown_pair(twice[0]["text"], twice[1]["text"])
        problems.append("\n".join([
            "gave two different answers to the same greedy prompt (temperature 0, max_tokens %d; rule "
            "known_answers): a kernel that computes differently each time." % determinism_max_tokens,
            "  prompt %s" % shorten(determinism_prompt),
            "  first  -> %s (%d tokens)" % (shown[0], twice[0]["completion_tokens"]),
            "  second -> %s (%d tokens)" % (shown[1], twice[1]["completion_tokens"]),
            BUSY_HINT]))
    if not problems:
        return result, None
    hints = [CAUSES] + ([OFF_HINT] if result["correct"] < need else [])
    return result, "\n".join(problems + hints)
