# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter unit_settled: whether a systemd unit already is as a role wants it, from what a read asked."""
from __future__ import annotations

DOCUMENTATION = r"""
name: unit_settled
author: sparkfleet.gb10 developers
short_description: Whether a systemd unit is already enabled (or not) and running, from a read done earlier
version_added: 0.1.0
description:
- Reads the answer of C(systemctl show UNIT --property=UnitFileState,ActiveState) (a command result of
  M(sparkfleet.gb10.host_read), which a role's preflight asks with its other questions) and says whether the unit is
  running and its enablement is the one wanted. A role then skips its C(systemd_service) call, one module call per
  unit on a rerun, when that call would change nothing.
- A unit whose files or inputs changed in this run is not settled whatever the read said; the caller adds that
  condition (its handler restarts it and the start task runs again).
- False on anything it cannot read (a failed command, a missing unit, a unit that is starting or failed).
options:
  _input:
    description: The command result (C(rc), C(stdout)) of C(systemctl show UNIT --property=UnitFileState,ActiveState).
    type: dict
    required: true
  enabled:
    description: The enablement wanted; true wants C(enabled), false C(disabled), null either.
    type: bool
  active:
    description: Whether the unit must be running (C(ActiveState=active)); null for a unit only enabled, never
      started by the role (a boot unit).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Start the Ray head
  ansible.builtin.systemd_service:
    name: sparkfleet-ray-head
    enabled: true
    state: started
  when: not (__host.commands['unit'] | sparkfleet.gb10.unit_settled(enabled=true)) or __files is changed
"""

RETURN = r"""
_value:
  description: Whether the unit is active and enabled as wanted.
  type: bool
"""


from ansible_collections.sparkfleet.gb10.plugins.module_utils.systemd_unit import settled, unit_properties  # noqa: F401  pylint: disable=unused-import


def unit_settled(result, enabled=None, active=True):
    return settled(result, enabled=enabled, active=active)


class FilterModule(object):

    def filters(self):
        return {"unit_settled": unit_settled}
