# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter vllm_env_check; its function is in plugins/filter/vllm_args.py.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: vllm_env_check
author: sparkfleet.gb10 developers
short_description: A vLLM service's environment, refused when it brings back what the kernel rules turned off
version_added: 0.1.0
description:
- Returns the environment unchanged, or fails naming every variable that the rule book's kernel rules forbid on
  SM121 (FlashInfer attention, a CUTLASS or FlashInfer MoE backend, C(VLLM_USE_FLASHINFER_MOE_FP4) other than 0,
  C(VLLM_MARLIN_USE_ATOMIC_ADD) other than 1, ...), with the rule and its reason.
options:
  _input:
    description: The environment, variable name to value.
    type: dict
    required: true
  host:
    description: Inventory name used in the message.
    type: str
  variable:
    description: The inventory variable the environment came from, named in the message.
    type: str
    default: vllm_service_environment
"""

EXAMPLES = r"""
- name: Refuse an environment the kernel rules forbid
  ansible.builtin.set_fact:
    _env: "{{ vllm_service_environment | sparkfleet.gb10.vllm_env_check(host=inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: The environment, unchanged.
  type: dict
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.vllm_args import vllm_env_check


class FilterModule(object):

    def filters(self):
        return {"vllm_env_check": vllm_env_check}
