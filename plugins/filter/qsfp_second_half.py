# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter qsfp_second_half; its function is in plugins/filter/nccl_env.py, beside port_halves.

A file of its own gives it its own documentation: ansible-doc reads a filter's documentation
from the file that registers it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: qsfp_second_half
author: sparkfleet.gb10 developers
short_description: The other half of a Spark's QSFP port
version_added: "0.1.0"
description:
  - The ConnectX-7 of a Spark hangs off two PCIe links, so each QSFP port is two netdevs with the same C(s0fNnpN)
    suffix, one per link (rule book C(qsfp_both_halves), C(qsfp_link_prefixes)).
  - Returns the other link's netdev of the port, e.g. C(enP2p1s0f0np0) for C(enp1s0f0np0) and C(enp1s0f1np1) for
    C(enP2p1s0f1np1); port 1's half of the other link for a name without that suffix.
options:
  _input:
    description: The fabric netdev of the cabled port (C(sparkfleet_fabric_ifname)).
    type: str
    required: true
"""

EXAMPLES = r"""
second: "{{ 'enp1s0f0np0' | sparkfleet.gb10.qsfp_second_half }}"  # enP2p1s0f0np0
"""

RETURN = r"""
_value:
  description: The netdev name of the port's other half.
  type: str
"""

from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_env import second_half


class FilterModule(object):

    def filters(self):
        return {"qsfp_second_half": second_half}
