# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter fabric_firewall_stale: whether the live nftables table is not the one planned."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_firewall_stale
author: sparkfleet.gb10 developers
short_description: Whether the live fabric firewall table is not the one planned
version_added: "0.1.0"
description:
  - True when the live table (C(nft list table inet sparkfleet)) is absent, was loaded by hand or from an older plan -
    it does not carry the comment with the plan's digest that the planned table carries (C(fabric_firewall_plan)).
    The fabric_firewall role loads the table again then, even where its file did not change.
  - The comment is written in one place, C(plugins/module_utils/fabric_firewall.py) (C(live_is_stale), C(ruleset)).
options:
  _input:
    description: The answer of C(nft list table) (C(rc), C(stdout)), a C(sparkfleet.gb10.host_read) command result.
    type: dict
    required: true
  plan:
    description: The host's firewall plan (filter C(sparkfleet.gb10.fabric_firewall_plan); its C(digest)).
    type: dict
    required: true
"""

EXAMPLES = r"""
_fabric_firewall_stale: "{{ __fabric_firewall_host.commands.live | sparkfleet.gb10.fabric_firewall_stale(_fabric_firewall_plan) }}"
"""

RETURN = r"""
_value:
  description: Whether the live table must be loaded again.
  type: bool
"""

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fabric_firewall as fw


def fabric_firewall_stale(live, plan):
    return fw.live_is_stale(live, plan)


class FilterModule(object):

    def filters(self):
        return {"fabric_firewall_stale": fabric_firewall_stale}
