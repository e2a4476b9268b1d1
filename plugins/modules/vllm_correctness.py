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
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.probe
  - sparkfleet.gb10.vllm_endpoint
  - sparkfleet.gb10.vllm_correctness
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
  timeout:
    description: Seconds to wait for each answer.
    type: int
    default: 600
  max_tokens:
    description: max_tokens of each known-answer ask (rule book setting C(known_answers_max_tokens)).
    type: int
    default: 16
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_answer import endpoint_options
# The asking and judging are shared with sparkfleet.gb10.vllm_verify (the endpoint gate of fleet_verify).
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_correctness import asker, check_inputs, gate, gate_options


def main():
    module = AnsibleModule(
        argument_spec=dict(
            timeout=dict(type="int", default=600),
            max_tokens=dict(type="int", default=16, no_log=False),
            **dict(endpoint_options(), **gate_options())
        ),
        supports_check_mode=False,
    )
    p = module.params
    wrong = check_inputs(p["known_answers"], p["min_correct"])
    if wrong:
        module.fail_json(msg="%s: %s (rule book known_answers)" % (p["url"], wrong))

    ask = asker(p["url"], p["model"], p["api_key"], p["timeout"])
    result, failure = gate(ask, p["known_answers"], p["min_correct"], p["max_tokens"], p["determinism_prompt"],
                           p["determinism_max_tokens"])
    result["changed"] = False
    if failure:
        module.fail_json(msg="%s (model %s) %s" % (p["url"], p["model"], failure), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
