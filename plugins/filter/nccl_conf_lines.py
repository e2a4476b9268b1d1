# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter nccl_conf_lines: the lines of NCCL's system configuration that gb10_facts read."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nccl_conf_lines
author: sparkfleet.gb10 developers
short_description: The lines of NCCL's system configuration as gb10_facts read them, when it read that file
version_added: 0.1.0
description:
  - M(sparkfleet.gb10.gb10_facts) reads NCCL's system configuration (C(/etc/nccl.conf) unless told otherwise) with
    its other facts. When it read the file a role is about to judge, the role takes those lines instead of reading
    the file again; when it read another file, or gathered no such fact, the filter returns null and the role reads
    the file itself.
  - The logic is C(plugins/module_utils/nccl_conf.py).
options:
  _input:
    description: C(ansible_facts.gb10) of the host, or an empty dict when it has none.
    type: dict
    required: true
  path:
    description: The file the role judges (C(qsfp_network_nccl_conf)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Read NCCL's system configuration when the facts do not hold it
  ansible.builtin.slurp:
    src: /etc/nccl.conf
  register: __nccl_conf
  when: ansible_facts.gb10 | default({}) | sparkfleet.gb10.nccl_conf_lines('/etc/nccl.conf') is none
"""

RETURN = r"""
_value:
  description: The file's lines as read (comments and blank lines included), or null.
  type: list
  elements: str
"""

from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_conf


def nccl_conf_lines(gb10_facts, path):
    return nccl_conf.lines(gb10_facts, path)


class FilterModule(object):

    def filters(self):
        return {"nccl_conf_lines": nccl_conf_lines}
