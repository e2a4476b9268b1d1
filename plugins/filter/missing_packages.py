# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which of a role's Debian packages a host still lacks, from the packages gb10_facts read.

Every install task of the collection asks this before calling apt: when nothing is missing the
task is skipped, which saves an apt call (1-3 s each on the simulated fleet) on every rerun.
Without the facts (a role used alone, a host without dpkg-query) every package counts as
missing, so apt decides as before; a package installed earlier in the same run is still
missing in the facts, which only costs that one apt call.
"""
from __future__ import annotations

DOCUMENTATION = r"""
name: missing_packages
author: sparkfleet.gb10 developers
short_description: The Debian packages a host still lacks, from its gb10 facts
version_added: "0.1.0"
description:
- Returns the entries of the list that C(ansible_facts.gb10.packages) (read by C(sparkfleet.gb10.gb10_facts)) does
  not show installed. Install tasks skip C(apt) when it is empty.
- Without those facts every entry is returned, so C(apt) decides as before.
- C(name=version) counts as installed only at a version starting with the given one.
options:
  _input:
    description: Package names as C(apt) takes them (C(name), C(name:arch), C(name=version)).
    type: list
    elements: str
    required: true
  facts:
    description: C(ansible_facts) of the host.
    type: dict
"""

EXAMPLES = r"""
- name: Install nftables
  ansible.builtin.apt:
    name: "{{ fabric_firewall_packages }}"
    state: present
  when: fabric_firewall_packages | sparkfleet.gb10.missing_packages(ansible_facts) | length > 0
"""

RETURN = r"""
_value:
  description: The entries still to install, in their given order.
  type: list
  elements: str
"""

import re

from ansible.errors import AnsibleFilterError

# apt's name forms: name, name=version, name:arch, name>=... is not apt's; name* globs are refused.
_NAME_RE = re.compile(r"^([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9-]+)?(?:=(.+))?$")


def missing_packages(names, facts=None):
    """``names``: what the role installs (apt's ``name``); ``facts``: ``ansible_facts``.

    Returns the names still to install, in their given order. A ``name=version`` entry counts as
    installed only at a version starting with the given one (apt's ``=1.2*`` form included).
    """
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, (list, tuple)):
        raise AnsibleFilterError("missing_packages: expected a list of package names, got %r" % (names,))
    installed = ((facts or {}).get("gb10") or {}).get("packages")
    if not isinstance(installed, dict):
        return list(names)
    missing = []
    for entry in names:
        match = _NAME_RE.match(str(entry))
        if not match:
            raise AnsibleFilterError("missing_packages: %r is not a Debian package name (name, name:arch or "
                                     "name=version)" % (entry,))
        name, version = match.group(1), match.group(2)
        have = installed.get(name)
        if have is None or (version is not None and not have.startswith(version.rstrip("*"))):
            missing.append(entry)
    return missing


class FilterModule(object):

    def filters(self):
        return {"missing_packages": missing_packages}
