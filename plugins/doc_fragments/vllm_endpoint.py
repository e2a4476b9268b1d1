# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The options that name one vLLM endpoint to ask for completions (its completions URL, the served model, its key),
documented once for the modules that take them: sparkfleet.gb10.vllm_completion and sparkfleet.gb10.vllm_correctness
(their argument spec is plugins/module_utils/vllm_answer.py's ``endpoint_options()``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):  # pylint: disable=too-few-public-methods

    DOCUMENTATION = r"""
options:
  api_key:
    description: "The endpoint's API key, sent as C(Authorization: Bearer); empty sends none."
    type: str
    default: ""
  model:
    description: The served model name.
    type: str
    required: true
  url:
    description: The completions URL, for example C(http://127.0.0.1:8000/v1/completions).
    type: str
    required: true
"""
