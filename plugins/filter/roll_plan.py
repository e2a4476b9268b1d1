# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter roll_plan: the fleet plan a roll's batch size is read from (playbooks/vars/roll.yml)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: roll_plan
author: sparkfleet.gb10 developers
short_description: The fleet plan preflight stored, for a roll's batch size
version_added: "0.1.0"
description:
  - The fleet plan (C(ansible_facts.sparkfleet_plan)) of the first of the hosts given that holds one - preflight
    stores it on the hosts it ran on, which under C(--limit) need not be the first Spark. C(serial) is templated
    without a host, so the roll plays (C(playbooks/vars/roll.yml)) read it this way.
  - Empty when no host holds one (C(roll_serial) gives 1 then).
options:
  _input:
    description: Inventory names, in order (C(groups['sparks'])).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
"""

EXAMPLES = r"""
_roll_plan: "{{ groups['sparks'] | sparkfleet.gb10.roll_plan(hostvars) | default({}) }}"
_roll_serial: "{{ sparkfleet_rolling_serial | default(_roll_plan | sparkfleet.gb10.roll_serial) | int }}"
"""

RETURN = r"""
_value:
  description: The stored fleet plan, or an empty mapping.
  type: dict
"""


def roll_plan(hosts, hostvars):
    """The ``ansible_facts.sparkfleet_plan`` of the first of ``hosts`` that has one; ``{}`` when none has (or it
    is empty)."""
    for host in hosts:
        facts = hostvars[host]["ansible_facts"] if "ansible_facts" in hostvars[host] else {}
        if "sparkfleet_plan" in facts:
            return facts["sparkfleet_plan"] or {}
    return {}


class FilterModule(object):

    def filters(self):
        return {"roll_plan": roll_plan}
