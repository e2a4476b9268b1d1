#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Ask a vLLM endpoint for one completion and time it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_completion
short_description: Ask a vLLM endpoint for one completion and measure its tokens per second
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.attributes
  - sparkfleet.gb10.attributes.probe
  - sparkfleet.gb10.vllm_endpoint
description:
  - Sends one request to the OpenAI-compatible C(/v1/completions) of a vLLM endpoint and measures, on the
    host, the wall time from sending the request to having read the whole response.
  - Returns the response, C(completion_tokens) from its C(usage) and C(tokens_per_second) (completion tokens
    over that wall time, prefill and HTTP included), which the fleet table shows per model.
  - Fails when the endpoint does not answer 200 or the answer has no completion tokens.
  - Read-only on the host, but it makes the model generate; like M(ansible.builtin.uri) it is skipped in check mode.
options:
  prompt:
    description: The prompt.
    type: str
    required: true
  max_tokens:
    description: max_tokens of the request (reasoning models need enough to get past their thinking).
    type: int
    default: 16
  timeout:
    description: Seconds to wait for the answer.
    type: int
    default: 600
seealso:
  - module: sparkfleet.gb10.vllm_verify
  - module: sparkfleet.gb10.vllm_ready
author:
  - sparkfleet.gb10 developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Ask the endpoint for a completion
  sparkfleet.gb10.vllm_completion:
    url: http://127.0.0.1:8000/v1/completions
    model: tiny-tp
    prompt: The capital of France is
    max_tokens: 16
    api_key: "{{ vllm_service_api_key }}"
  register: completion
"""

RETURN = r"""
status:
  description: HTTP status of the answer (-1 when the request failed before one came).
  returned: always
  type: int
  sample: 200
elapsed:
  description: Seconds from sending the request to having read the answer.
  returned: always
  type: float
  sample: 0.412
completion_tokens:
  description: usage.completion_tokens of the answer (0 when it has none).
  returned: always
  type: int
  sample: 16
tokens_per_second:
  description: completion_tokens / elapsed, rounded to 0.1 (0.0 when either is missing).
  returned: always
  type: float
  sample: 38.8
text:
  description: The text of the first choice.
  returned: always
  type: str
  sample: " Paris"
json:
  description: The whole answer.
  returned: when the answer was JSON
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_answer import endpoint_options, timed_completion


def main():
    module = AnsibleModule(
        argument_spec=dict(
            prompt=dict(type="str", required=True),
            max_tokens=dict(type="int", default=16, no_log=False),
            timeout=dict(type="int", default=600),
            **endpoint_options()
        ),
        supports_check_mode=False,
    )
    p = module.params
    result, _body, error = timed_completion(p["url"], p["model"], p["prompt"], p["max_tokens"], p["api_key"], p["timeout"])
    result["changed"] = False
    if result["status"] != 200:
        module.fail_json(msg="%s answered %s: %s" % (p["url"], result["status"], error), **result)
    if result["completion_tokens"] == 0:
        module.fail_json(msg="%s answered 200 without completion tokens (max_tokens=%d)" % (p["url"], p["max_tokens"]),
                         **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
