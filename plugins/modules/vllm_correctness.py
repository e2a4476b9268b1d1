#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Ask a vLLM endpoint questions whose answers are known, and one prompt twice: is it right, not only up?"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_correctness
short_description: Judge whether a vLLM endpoint answers right, not only whether it answers
version_added: "0.1.0"
description:
  - A model whose kernels compute garbage still answers HTTP 200 with fluent text (CUTLASS FP4 MoE on SM121,
    rule C(moe_backend)). This module asks the OpenAI-compatible C(/v1/completions) of a vLLM endpoint
    questions whose answers are known, greedily (temperature 0), and judges each answer.
  - An answer is right when it holds one of the accepted words as a whole word, in any case.
  - Then it asks one prompt twice, greedily, and compares the two answers (text and completion token count).
    Greedy decoding on an idle endpoint repeats itself, a kernel with a race does not.
  - With O(known_answers) empty only the second check runs (form C(determinism)), for a model that cannot
    know anything (random test weights); otherwise both run (form C(known-answers)).
  - Fails when fewer than O(min_correct) answers are right or the two answers differ, with each prompt, what
    came back and what was expected, the likely causes and the fix; also when the endpoint does not answer 200
    or answers without completion tokens.
  - The prompts and thresholds live in the rule book (rule C(known_answers)); the role fleet_verify passes them
    through the lookup C(sparkfleet.gb10.rulebook).
  - Read-only on the host, but it makes the model generate; like M(ansible.builtin.uri) it is skipped in check mode.
options:
  url:
    description: The completions URL, for example C(http://127.0.0.1:8000/v1/completions).
    type: str
    required: true
  model:
    description: The served model name.
    type: str
    required: true
  api_key:
    description: "The endpoint's API key, sent as C(Authorization: Bearer); empty sends none."
    type: str
    default: ""
  timeout:
    description: Seconds to wait for each answer.
    type: int
    default: 600
  known_answers:
    description:
      - The prompts whose answers are known (rule book setting C(known_answers)); empty asks none of them.
    type: list
    elements: dict
    default: []
    suboptions:
      prompt:
        description: The prompt, completed as it is (no chat template).
        type: str
        required: true
      expect:
        description: The accepted words; the answer must hold one of them as a whole word (case does not matter).
        type: list
        elements: str
        required: true
  min_correct:
    description:
      - How many known answers must be right (rule book setting C(known_answers_min_correct)).
      - Default (and at most) all of them.
    type: int
  max_tokens:
    description: max_tokens of each known-answer ask (rule book setting C(known_answers_max_tokens)).
    type: int
    default: 16
  determinism_prompt:
    description: The prompt asked twice (rule book setting C(determinism_prompt)); keep it shorter than one KV block.
    type: str
    required: true
  determinism_max_tokens:
    description: max_tokens of each determinism ask (rule book setting C(determinism_max_tokens)).
    type: int
    default: 8
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: none
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
    support: full
notes:
  - The asks are sent one after the other. Requests other clients send at the same moment are batched with them,
    and batched kernels may round differently; a determinism failure on a busy endpoint is worth one more run
    when it is idle.
seealso:
  - module: sparkfleet.gb10.vllm_completion
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Known answers and the determinism ask, with the rule book's prompts
  sparkfleet.gb10.vllm_correctness:
    url: http://127.0.0.1:8000/v1/completions
    model: qwen3-30b
    api_key: "{{ vllm_service_api_key }}"
    known_answers: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers') }}"
    min_correct: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers_min_correct') }}"
    max_tokens: "{{ lookup('sparkfleet.gb10.rulebook', 'known_answers_max_tokens') }}"
    determinism_prompt: "{{ lookup('sparkfleet.gb10.rulebook', 'determinism_prompt') }}"
    determinism_max_tokens: "{{ lookup('sparkfleet.gb10.rulebook', 'determinism_max_tokens') }}"
  register: correctness

- name: Only the determinism ask (a model with random test weights)
  sparkfleet.gb10.vllm_correctness:
    url: http://127.0.0.1:8000/v1/completions
    model: tiny-tp
    known_answers: []
    determinism_prompt: One two three
    determinism_max_tokens: 8
"""

RETURN = r"""
form:
  description:
    - Which checks ran, C(known-answers) (the known answers and the determinism ask) or C(determinism) (only it).
  returned: always
  type: str
  sample: known-answers
answers:
  description: One item per known answer, in order (empty in the C(determinism) form).
  returned: always
  type: list
  elements: dict
  contains:
    prompt:
      description: The prompt.
      type: str
    expect:
      description: The accepted words.
      type: list
      elements: str
    answer:
      description: The text of the answer.
      type: str
    completion_tokens:
      description: usage.completion_tokens of the answer.
      type: int
    correct:
      description: Whether the answer holds an accepted word.
      type: bool
    matched:
      description: The accepted word found (null when none).
      type: str
  sample:
    - {prompt: The capital of France is, expect: [Paris], answer: " Paris. It is", completion_tokens: 16,
       correct: true, matched: Paris}
correct:
  description: How many known answers were right.
  returned: always
  type: int
  sample: 3
min_correct:
  description: How many had to be (0 in the C(determinism) form).
  returned: always
  type: int
  sample: 2
deterministic:
  description: Whether both determinism asks gave the same text and the same number of completion tokens.
  returned: always
  type: bool
  sample: true
determinism:
  description: The determinism prompt and both answers (text and completion tokens).
  returned: always
  type: dict
  sample: {prompt: One two three, answers: [" four five six", " four five six"], completion_tokens: [8, 8]}
summary:
  description: A short verdict for the fleet table, for example C(answers 3/3) or C(same twice).
  returned: always
  type: str
  sample: answers 3/3
"""

import json
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_answer import completion_request

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
    """``{status, text, completion_tokens}`` of a /v1/completions answer (raw body, str or bytes)."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    answer = {"status": status, "text": "", "completion_tokens": 0}
    try:
        data = json.loads(body) if body else None
    except ValueError:
        data = None
    if isinstance(data, dict):
        choices = data.get("choices") or [{}]
        first = choices[0] if isinstance(choices[0], dict) else {}
        answer["text"] = str(first.get("text") or "")
        try:
            answer["completion_tokens"] = int((data.get("usage") or {}).get("completion_tokens") or 0)
        except (TypeError, ValueError):
            answer["completion_tokens"] = 0
    return answer


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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            model=dict(type="str", required=True),
            api_key=dict(type="str", default="", no_log=True),
            timeout=dict(type="int", default=600),
            known_answers=dict(type="list", elements="dict", default=[], options=dict(
                prompt=dict(type="str", required=True),
                expect=dict(type="list", elements="str", required=True),
            )),
            min_correct=dict(type="int"),
            max_tokens=dict(type="int", default=16, no_log=False),
            determinism_prompt=dict(type="str", required=True),
            determinism_max_tokens=dict(type="int", default=8, no_log=False),
        ),
        supports_check_mode=False,
    )
    p = module.params
    wrong = check_inputs(p["known_answers"], p["min_correct"])
    if wrong:
        module.fail_json(msg="%s: %s (rule book known_answers)" % (p["url"], wrong))

    def ask(prompt, max_tokens):
        headers, payload = completion_request(p["model"], prompt, max_tokens, p["api_key"])
        response, info = fetch_url(module, p["url"], data=payload, headers=headers, method="POST",
                                   timeout=p["timeout"])
        body = response.read() if response else info.get("body", b"")
        answer = read_answer(info.get("status", -1), body)
        if answer["status"] != 200:
            answer["error"] = info.get("msg", "")
        return answer

    result, failure = gate(ask, p["known_answers"], p["min_correct"], p["max_tokens"], p["determinism_prompt"],
                           p["determinism_max_tokens"])
    result["changed"] = False
    if failure:
        module.fail_json(msg="%s (model %s) %s" % (p["url"], p["model"], failure), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
