# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter fabric_problems: what keeps a host's fabric from carrying jumbo frames, one sentence each."""
from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_problems
author: sparkfleet.gb10 developers
short_description: Every problem of a host's fabric after qsfp_network configured it, one sentence each
version_added: 0.1.0
description:
  - Judges one host's fabric interfaces from the kernel's view (C(ip -j addr show)) and its don't-fragment jumbo
    pings to every peer (M(sparkfleet.gb10.fabric_ping)). An empty list means the fabric carries jumbo frames.
  - "An interface whose MTU is not O(mtu), whose fabric address is missing, or which carries another IPv4 address
    beside it (Gloo and NCCL's socket bootstrap may take that one) is a problem, named with the host and the
    interface; the last one with the C(ip addr del) that removes it."
  - A failed ping is named with both ends, each end's address and the MTU its own host shows (from O(peers)), and
    ping's last line about it.
  - The logic is C(plugins/module_utils/fabric_check.py); it selects from the JSON with jmespath, which must be
    installed on the controller.
options:
  _input:
    description: The host's C(ip -j addr show) output, as text or parsed.
    type: raw
    required: true
  present:
    description: The host's fabric interfaces, C([{name, address}]); C(address) with its prefix length, or empty.
    type: list
    elements: dict
    required: true
  pings:
    description: What M(sparkfleet.gb10.fabric_ping) returned (its C(results)), or the skipped task's result.
    type: dict
  peers:
    description: Each peer's own C(ip -j addr show) output, by inventory name, for the MTU of its end of a failed ping.
    type: dict
  mtu:
    description: The MTU every fabric interface must have.
    type: int
    default: 9000
  payload:
    description: The ping payload in bytes, named in a failed ping's sentence.
    type: int
    default: 8972
  host:
    description: The inventory name the sentences start with.
    type: str
"""

EXAMPLES = r"""
- name: Collect the fabric problems of this host
  ansible.builtin.set_fact:
    _problems: >-
      {{ __ip.stdout | sparkfleet.gb10.fabric_problems(_present, __pings, {'spark-2': hostvars['spark-2'].__ip.stdout},
         mtu=9000, payload=8972, host=inventory_hostname) }}
"""

RETURN = r"""
_value:
  description: One sentence per problem, the interfaces' first, then the failed pings'; empty when there is none.
  type: list
  elements: str
  sample:
    - "spark-1 enp1s0f1np1 (192.168.100.11, MTU 9000) -> spark-2 enp1s0f1np1 (192.168.100.12, MTU 1500): 8972-byte
      don't-fragment ping failed: ping: local error: message too long, mtu=1500"
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fabric_check


def fabric_problems(ip_addr, present, pings=None, peers=None, mtu=9000, payload=8972, host=""):
    if fabric_check.jmespath is None:
        raise AnsibleFilterError("fabric_problems needs the python jmespath library on the controller")
    try:
        return fabric_check.problems(ip_addr, present, pings=pings, peers=peers, mtu=mtu, payload=payload, host=host)
    except (ValueError, TypeError, KeyError) as exc:
        raise AnsibleFilterError("fabric_problems: %s" % exc)


class FilterModule(object):

    def filters(self):
        return {"fabric_problems": fabric_problems}
