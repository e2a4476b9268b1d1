# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: rulebook
author: sparkfleet.gb10 developers (!UNKNOWN)
short_description: Read a setting from the GB10/SM121 rule book
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.named_values
description:
  - Returns settings from C(plugins/module_utils/rulebook.py), the one place that holds every
    GB10/SM121 fact that changes behaviour (driver branch, NCCL version, MTU, memory ceilings, ...).
  - Role defaults and templates read their GB10 facts through this lookup instead of repeating them.
  - The table of all rules, with reasons and sources, is in C(docs/rules.md).
options:
  _terms:
    description:
      - Setting names, for example C(driver_branch), C(nccl_git_tag), C(fabric_mtu).
      - C(kernel_env) returns the environment every vLLM process gets from the kernel rules.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Refuse a forbidden driver branch
  ansible.builtin.assert:
    that: ansible_facts.gb10.driver.branch not in lookup('sparkfleet.gb10.rulebook', 'driver_forbidden_branches')

- name: Pin the NCCL source build
  ansible.builtin.set_fact:
    nccl_build_tag: "{{ lookup('sparkfleet.gb10.rulebook', 'nccl_git_tag') }}"

- name: Several settings at once (a list, in term order)
  ansible.builtin.debug:
    msg: "{{ query('sparkfleet.gb10.rulebook', 'fabric_mtu', 'jumbo_ping_payload') }}"
"""

RETURN = r"""
_raw:
  description:
    - The value of each named setting (string, number, boolean, list or dict), in term order.
  type: list
  elements: raw
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

DERIVED = {
    "kernel_env": rulebook.kernel_env,
}


def known_keys():
    return sorted(set(rulebook.SETTINGS) | set(DERIVED))


def get_setting(key):
    if not isinstance(key, str):
        raise AnsibleError("sparkfleet.gb10.rulebook: setting names are strings, got %r" % (key,))
    if key in DERIVED:
        return DERIVED[key]()
    if key not in rulebook.SETTINGS:
        raise AnsibleError(
            "sparkfleet.gb10.rulebook: unknown setting '%s'. Known settings: %s (see docs/rules.md)"
            % (key, ", ".join(known_keys()))
        )
    return rulebook.setting(key)


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return [get_setting(term) for term in terms]
