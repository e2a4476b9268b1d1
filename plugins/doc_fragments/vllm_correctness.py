# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The options of the correctness gate (plugins/module_utils/vllm_correctness.py), documented once for the modules
that take them: sparkfleet.gb10.vllm_correctness and sparkfleet.gb10.vllm_verify (their argument spec is the
module_utils' ``gate_options()``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):  # pylint: disable=too-few-public-methods

    DOCUMENTATION = r"""
options:
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
  determinism_prompt:
    description: The prompt asked twice (rule book setting C(determinism_prompt)); keep it shorter than one KV block.
    type: str
    required: true
  determinism_max_tokens:
    description: max_tokens of each determinism ask (rule book setting C(determinism_max_tokens)).
    type: int
    default: 8
"""
