# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: systemd_exposure
author: sparkfleet.gb10 developers
short_description: Read the overall exposure of a unit from C(systemd-analyze security) and judge it
version_added: "0.1.0"
description:
  - "Parses the line C(→ Overall exposure level for UNIT: 4.2 OK) that C(systemd-analyze security UNIT) prints
    (systemd 252; see the recordings under C(tests/fixtures/systemd/))."
  - With O(kind), compares the exposure with the project's threshold for that kind of unit
    (in C(plugins/module_utils/unit_security.py), vLLM 5.0 and Ray 6.0).
  - Fails on text without such a line, or with more than one (analyse one unit at a time).
options:
  _input:
    description: The stdout of C(systemd-analyze security UNIT).
    type: str
    required: true
  kind:
    description: C(vllm), C(ray) or C(rsyncd); adds RV(_value.threshold) and RV(_value.ok).
    type: str
"""

EXAMPLES = r"""
- name: The vLLM unit is hardened enough
  ansible.builtin.assert:
    that: (__analyze.stdout | sparkfleet.gb10.systemd_exposure(kind='vllm')).ok
"""

RETURN = r"""
_value:
  description: The unit's overall exposure.
  type: dict
  contains:
    unit: {description: The unit name as printed, type: str}
    exposure: {description: "Overall exposure, 0.0 (locked down) to 10.0 (unprotected)", type: float}
    rating: {description: "systemd's word for it (OK, MEDIUM, EXPOSED, UNSAFE)", type: str}
    threshold: {description: The project's threshold for O(kind) (only with O(kind)), type: float}
    ok: {description: exposure <= threshold (only with O(kind)), type: bool}
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import unit_security


def systemd_exposure(text, kind=None):
    if not isinstance(text, str):
        raise AnsibleFilterError("systemd_exposure: expected the text of `systemd-analyze security UNIT`, got %s"
                                 % type(text).__name__)
    found = unit_security.parse_exposure(text)
    if len(found) != 1:
        raise AnsibleFilterError("systemd_exposure: expected one 'Overall exposure level for UNIT: N' line in the "
                                 "output of `systemd-analyze security UNIT`, found %d" % len(found))
    result = dict(found[0])
    if kind is not None:
        try:
            result["threshold"] = unit_security.threshold(kind)
        except KeyError as exc:
            raise AnsibleFilterError("systemd_exposure: %s" % exc.args[0])
        result["ok"] = result["exposure"] <= result["threshold"]
    return result


class FilterModule:
    def filters(self):
        return {"systemd_exposure": systemd_exposure}
