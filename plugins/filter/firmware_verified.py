# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter firmware_verified: whether the firmware installed before a reboot is the firmware each device runs after it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: firmware_verified
author: sparkfleet.gb10 developers
short_description: Whether each firmware update installed before a reboot runs on its device after it, by version
version_added: 0.1.0
description:
- Judges the firmware phase of M(sparkfleet.gb10.os_update_plan)'s updates (RV(sparkfleet.gb10.os_update_plan#module:firmware)),
  installed by fwupd before the phase's reboot, from what M(sparkfleet.gb10.host_read) ran after it,
  C(fwupdmgr get-devices --json) (answer C(devices)) and C(fwupdmgr get-history --json) (answer C(history)).
- An update is verified when its device runs the release's version; otherwise the answer names the version the
  device runs and what fwupd recorded of the install (after the reboot of an update that needs one, fwupd itself
  records C(failed to run update on reboot, expected X and got Y)).
options:
  _input:
    description: M(sparkfleet.gb10.host_read)'s C(commands) answer, with C(devices) and C(history).
    type: dict
    required: true
  installed:
    description: The updates installed before the reboot (the plan's C(firmware) items).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the firmware after its reboot
  ansible.builtin.assert:
    that: (__read.commands | sparkfleet.gb10.firmware_verified(os_update_plan.firmware)).ok
"""

RETURN = r"""
_value:
  description:
  - C(ok), whether every update is verified; C(devices), each update with C(name), C(expected), C(found) and
    C(history) (fwupd's C(update_state), C(update_error), C(release)); C(problems), one line for a person per update
    that is not verified (or fwupd's own failure), with the fix; C(line), the verified ones for the summary.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fwupd


def _parsed(answer, what):
    if not isinstance(answer, dict):
        raise AnsibleFilterError("firmware_verified: no answer of fwupdmgr %s (host_read's commands.%s)" % (what, what))
    return fwupd.parse_devices(answer.get("rc"), answer.get("stdout") or "", answer.get("stderr") or "")


def firmware_verified(commands, installed):
    if not isinstance(commands, dict):
        raise AnsibleFilterError("firmware_verified: expected host_read's commands answer, got %r" % (commands,))
    try:
        devices = _parsed(commands.get("devices"), "devices")
        history = _parsed(commands.get("history"), "history")
    except fwupd.FwupdError as exc:
        return {"ok": False, "devices": [], "line": "",
                "problems": ["fwupd cannot say which firmware the devices run after the reboot (%s): the firmware "
                             "update is not verified. Fix fwupd (systemctl status fwupd), then fwupdmgr get-devices" % exc]}
    results = fwupd.verify(list(installed or []), devices, history)
    problems = []
    for item in results:
        if item["ok"]:
            continue
        recorded = item["history"] or {}
        said = "; fwupd recorded %s%s" % (recorded.get("update_state"), (": " + recorded["update_error"])
                                          if recorded.get("update_error") else "") if recorded else ""
        problems.append("firmware of %s runs %s after its reboot, not the %s installed before it%s. The device kept "
                        "or went back to its old firmware: see fwupdmgr get-history and the vendor's notes before "
                        "trying again (os_update_firmware); the kernel update of this host is done"
                        % (item["name"], item["found"] or "no version (device gone)", item["expected"], said))
    return {"ok": not problems, "devices": results, "problems": problems,
            "line": ", ".join("%s %s" % (item["name"], item["found"]) for item in results if item["ok"])}


class FilterModule:
    def filters(self):
        return {"firmware_verified": firmware_verified}
