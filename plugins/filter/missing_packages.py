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

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.sparkfleet.gb10.plugins.module_utils import driver_packages as packages_plan
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

# A Debian package name, the one pattern both filters read an apt entry with.
_PACKAGE = r"[a-z0-9][a-z0-9+.-]*"
# What the facts can settle: a plain Debian package name, optionally =version (or =version*).
_NAME_RE = re.compile(r"^(%s)(?:=([^=<>*]+\*?))?$" % _PACKAGE)
# The package an apt entry names, whatever follows it (=version, :arch, >=version).
_LEADING_RE = re.compile(r"^(%s)(?:$|[=:<>])" % _PACKAGE)


def package_name(entries):
    """The package name of an apt entry (``name``, ``name=version``, ``name:arch``, ``name>=1.0``), or of
    each entry of a list."""
    if isinstance(entries, (list, tuple)):
        return [package_name(entry) for entry in entries]
    match = _LEADING_RE.match(str(entries))
    if not match:
        raise AnsibleFilterError("package_name: %r is not an apt package entry (name, name=version, name:arch)"
                                 % (entries,))
    return match.group(1)


def missing_packages(names, facts=None):
    """``names``: what the role installs (apt's ``name``); ``facts``: ``ansible_facts``.

    Returns the names still to install, in their given order. ``name=version`` counts as installed
    only at exactly that version (``name=1.2*``: at a version starting with 1.2). Whatever the facts
    cannot settle (``name:arch``, a comparison such as ``name>=1.0``, a glob) counts as missing, so
    apt decides.
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
        have = installed.get(match.group(1)) if match else None
        if have is None:
            missing.append(entry)
            continue
        version = match.group(2)
        if version is not None and not (have.startswith(version[:-1]) if version.endswith("*") else have == version):
            missing.append(entry)
    return missing


def driver_unit(branch, flavour=None, kernel_module="precompiled"):
    """The packages that move as one on DGX OS for a driver branch (rule kernel_updates): see the filter's
    documentation (driver_unit.yml)."""
    try:
        return rulebook.driver_unit(branch, flavour or None, kernel_module)
    except ValueError as exc:
        raise AnsibleFilterError("driver_unit: %s" % exc)


def driver_packages(unit, packages, versions=None, hold_kernel=True):
    """What the nvidia_driver role installs, moves back to the branch, takes off DKMS and holds: see the filter's
    documentation (driver_packages.yml)."""
    return packages_plan.plan(unit, packages, versions, boolean(hold_kernel, strict=False))


class FilterModule(object):

    def filters(self):
        return {
            "driver_packages": driver_packages,
            "driver_unit": driver_unit,
            "missing_packages": missing_packages,
            "package_name": package_name,
        }
