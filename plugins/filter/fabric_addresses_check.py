# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter fabric_addresses_check; its function is in plugins/filter/fabric_address.py.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_addresses_check
author: sparkfleet.gb10 developers
short_description: Check a plan of fabric addresses against the fabric subnet
version_added: 0.1.0
description:
- Fails, naming every host at fault, when an address is outside the subnet, is its network or broadcast address,
  is not IPv4, or is used twice. Returns the input unchanged otherwise.
options:
  _input:
    description: A dict of host to address, or a list of addresses.
    type: raw
    required: true
  subnet:
    description: The fabric subnet, for example C(192.168.100.0/24).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check the fabric plan
  ansible.builtin.assert:
    that: plan | sparkfleet.gb10.fabric_addresses_check('192.168.100.0/24') | length > 0
"""

RETURN = r"""
_value:
  description: The input, unchanged.
  type: raw
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.fabric_address import fabric_addresses_check


class FilterModule(object):

    def filters(self):
        return {"fabric_addresses_check": fabric_addresses_check}
