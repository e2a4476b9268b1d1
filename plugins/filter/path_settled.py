# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter path_settled: whether a path already is what a role would make it, from what host_read saw."""
from __future__ import annotations

DOCUMENTATION = r"""
name: path_settled
author: sparkfleet.gb10 developers
short_description: Whether a path already has the type, owner, group and mode a role wants, from a read done earlier
version_added: 0.1.0
description:
- Compares what M(sparkfleet.gb10.host_read) answered for a path (its C(files) entry) with what a role's C(file)
  task would make it. A role that read the path in its preflight skips that task, one module call on a rerun, when
  it would change nothing; any difference (a drifted mode, another owner, a file where a directory should be, no
  path at all) keeps the task, which then repairs it.
options:
  _input:
    description: The path's entry in host_read's C(files) answer (C(exists), C(type), C(owner), C(group), C(mode)).
    type: dict
    required: true
  type:
    description: C(file) or C(directory).
    type: str
    required: true
  owner:
    description: The account that should own it.
    type: str
    required: true
  group:
    description: The group that should own it.
    type: str
    required: true
  mode:
    description: The permission bits, octal (C(0750) or C(750)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Create the configuration directory
  ansible.builtin.file:
    path: /etc/sparkfleet/ray
    state: directory
    owner: root
    group: sparkfleet
    mode: "0750"
  when: __host.files['/etc/sparkfleet/ray'] | sparkfleet.gb10.path_settled('directory', 'root', 'sparkfleet', '0750') is false
"""

RETURN = r"""
_value:
  description: Whether the path exists as wanted.
  type: bool
"""


def path_settled(entry, type, owner, group, mode):  # noqa: A002 (the option's documented name)
    if not isinstance(entry, dict) or not entry.get("exists"):
        return False
    try:
        want_mode = "%04o" % int(str(mode), 8)
    except ValueError:
        return False
    return (entry.get("type") == type and entry.get("owner") == str(owner) and entry.get("group") == str(group)
            and entry.get("mode") == want_mode)


class FilterModule(object):

    def filters(self):
        return {"path_settled": path_settled}
