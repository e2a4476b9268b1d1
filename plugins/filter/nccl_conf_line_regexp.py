# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter nccl_conf_line_regexp: a forbidden nccl.conf line in any of its spellings."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_conf_line_regexp
author: sparkfleet.gb10 developers
short_description: The regular expression of a KEY=VALUE line of NCCL's system configuration, in any spelling
version_added: 0.1.0
description:
  - "Matches the line also written as C(export KEY=VALUE), C(KEY = VALUE) or C(KEY=\"VALUE\"), with a comment after
    it: the spellings NCCL reads as the same setting. The key and the value are escaped."
  - qsfp_network removes and checks the rule book's forbidden lines (C(nccl_conf_forbidden), C(NCCL_IB_DISABLE=1))
    with it.
  - The logic is C(plugins/module_utils/nccl_conf.py).
options:
  _input:
    description: The line, C(KEY=VALUE).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Remove NCCL_IB_DISABLE=1 from NCCL's system configuration
  ansible.builtin.lineinfile:
    path: /etc/nccl.conf
    regexp: "{{ 'NCCL_IB_DISABLE=1' | sparkfleet.gb10.nccl_conf_line_regexp }}"
    state: absent
"""

RETURN = r"""
_value:
  description: A Python regular expression, anchored at both ends.
  type: str
  sample: '^\s*(export\s+)?NCCL_IB_DISABLE\s*=\s*"?1"?\s*(#.*)?$'
"""

from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_conf


def nccl_conf_line_regexp(line):
    return nccl_conf.line_regexp(str(line))


class FilterModule(object):

    def filters(self):
        return {"nccl_conf_line_regexp": nccl_conf_line_regexp}
