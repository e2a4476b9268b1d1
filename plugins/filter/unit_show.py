# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter unit_show: the host_read command whose answer unit_settled judges, written once."""
from __future__ import annotations

DOCUMENTATION = r"""
name: unit_show
author: sparkfleet.gb10 developers
short_description: The host_read command that asks a systemd unit's state, for unit_settled
version_added: 0.1.0
description:
- Returns C({name, argv}) for the O(sparkfleet.gb10.host_read#module:commands) of M(sparkfleet.gb10.host_read) that asks
  C(systemctl show UNIT --property=UnitFileState,ActiveState), the properties the filter
  C(sparkfleet.gb10.unit_settled) reads. The roles add it to the read they make anyway.
options:
  _input:
    description: The unit, with its suffix (C(sparkfleet-ray-head.service), C(sparkfleet-health.timer)).
    type: str
    required: true
  name:
    description: The command's name in host_read's answer; the unit when omitted.
    type: str
"""

EXAMPLES = r"""
- name: Read the unit's state with the role's other questions
  sparkfleet.gb10.host_read:
    commands: "{{ [('sparkfleet-ray-head.service' | sparkfleet.gb10.unit_show('unit'))] }}"
  register: __host
"""

RETURN = r"""
_value:
  description: The command, C({name, argv}).
  type: dict
"""

from ansible_collections.sparkfleet.gb10.plugins.module_utils.systemd_unit import show_command


def unit_show(unit, name=None):
    return show_command(unit, name)


class FilterModule(object):

    def filters(self):
        return {"unit_show": unit_show}
