# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the nvidia_driver role asks apt and dpkg for, from the driver's unit (rulebook.driver_unit) and the
packages gb10_facts read: the packages of the branch, the ones installed off it (a 590 transitional package behind
a 580 name, from an ``apt upgrade`` without the pin), the DKMS driver to take out, the names to install and the
packages held together (rule kernel_updates). Pure Python behind the filter ``driver_packages``
(plugins/filter/missing_packages.py)."""

from __future__ import annotations

import re


def plan(unit, packages, versions, hold_kernel=True):
    """``unit``: rulebook.driver_unit's answer (its ``branch`` and ``kernel_module`` too); ``packages``: the
    driver's user space the role installs (nvidia_driver_packages); ``versions``: {name: version} of the installed
    packages (empty without the facts). Returns:

    * ``on_branch``: the installed packages whose version is of the branch (``[epoch:]<branch>.``);
    * ``branch``: the packages whose versions are the branch's: the user space, and the DKMS driver (the module
      metapackage is versioned like its kernel);
    * ``off_branch``: those installed at a version of another branch;
    * ``dkms_installed``: where the precompiled module is wanted, the DKMS driver the host has (it goes in the
      transaction that brings the module metapackage);
    * ``install``: apt's names: ``name=<branch>.*`` for a package off the branch (a downgrade), and the module
      metapackage where it is precompiled;
    * ``held``: the user space, the module package and, with ``hold_kernel``, the kernel's metapackages that are
      installed (a host on another kernel flavour has none)."""
    versions = versions or {}
    branch = unit["branch"]
    precompiled = unit["kernel_module"] == "precompiled"
    module = list(unit["module"])
    of_branch = re.compile(r"^([0-9]+:)?%s[.]" % re.escape(branch))
    on_branch = [name for name, version in versions.items() if of_branch.search(str(version))]
    branch_packages = list(packages) + ([] if precompiled else module)
    off_branch = [name for name in branch_packages if name in versions and name not in on_branch]
    dkms_installed = []
    if precompiled:
        dkms_installed = [name for name in _unique(unit["any_module"]) if name not in module and name in versions]
    install = ["%s=%s.*" % (name, branch) if name in off_branch else name for name in branch_packages]
    kernel = [name for name in unit["kernel"] if name in versions] if hold_kernel else []
    return {"on_branch": on_branch, "branch": branch_packages, "off_branch": off_branch,
            "dkms_installed": dkms_installed, "install": install + (module if precompiled else []),
            "held": list(packages) + module + kernel}


def _unique(names):
    seen = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen
