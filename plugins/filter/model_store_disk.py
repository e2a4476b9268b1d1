# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter model_store_disk; its function is in plugins/filter/model_store_plan.py.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: model_store_disk
author: sparkfleet.gb10 developers
short_description: The refusal when the models a host will hold do not fit its disk
version_added: 1.0.0
description:
- Sums C(need_bytes) of the registered results of C(sparkfleet.gb10.model_files) with C(state=planned) and compares
  it, plus a reserve, with the free bytes of the store's filesystem.
- Returns an empty string when they fit, else a message naming the host, the path, what is needed, what is free
  and the fix.
options:
  _input:
    description: Registered loop results of model_files state=planned (skipped ones are left out).
    type: list
    elements: dict
    required: true
  host:
    description: Inventory name used in the message.
    type: str
    required: true
  reserve:
    description: Bytes to keep free after all models are placed.
    type: int
    default: 0
  store_dir:
    description: The store directory, named when no result says which path it measured.
    type: str
"""

EXAMPLES = r"""
- name: Refuse before fetching
  ansible.builtin.assert:
    that: _problem | length == 0
    fail_msg: "{{ _problem }}"
  vars:
    _problem: "{{ planned.results | sparkfleet.gb10.model_store_disk(inventory_hostname, 5368709120) }}"
"""

RETURN = r"""
_value:
  description: Empty when the models fit, else the refusal.
  type: str
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.model_store_plan import model_store_disk


class FilterModule(object):

    def filters(self):
        return {"model_store_disk": model_store_disk}
