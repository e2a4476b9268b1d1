# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A role's options, the variables its tasks read: those of its ``meta/argument_specs.yml`` (main entry point),
each named with the role's prefix (``tests/unit/roles/test_role_specs.py`` keeps them the role's defaults).

The lookup ``sparkfleet.gb10.role_vars`` templates them as a task sees them and hands them over in one mapping,
keyed without the prefix, so that a role's ``vars/`` passes its settings to a tested filter in one line.

The filters that read those settings read a number or a switch the way the role's Jinja did (``integer``, ``on``).

Pure Python; PyYAML is imported when first wanted (a module_utils file must import without it).
"""

from __future__ import annotations

import functools
import os

from ansible.module_utils.parsing.convert_bool import boolean

ROLES_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "roles"))


@functools.lru_cache(maxsize=None)
def options(role, roles_dir=ROLES_DIR):
    """The names of ``role``'s options, sorted; KeyError naming the roles that have some when it has none."""
    import yaml

    path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
    specs = {}
    if os.path.isfile(path):
        with open(path) as handle:
            specs = (yaml.safe_load(handle) or {}).get("argument_specs") or {}
    names = sorted(((specs.get("main") or {}).get("options") or {}))
    if not names:
        known = sorted(r for r in os.listdir(roles_dir)
                       if os.path.isfile(os.path.join(roles_dir, r, "meta", "argument_specs.yml")))
        raise KeyError("role %r has no options (roles with an argument_specs.yml: %s)" % (role, ", ".join(known)))
    return tuple(names)


def short_name(role, name):
    """``name`` without ``role``'s prefix (``fleet_health_timeout`` -> ``timeout``)."""
    prefix = role + "_"
    return name[len(prefix):] if name.startswith(prefix) else name


def integer(value, default=0):
    """``value`` as an integer the way Jinja's ``int`` filter reads it (``'60'``, ``60.0``; ``default`` where it
    is no number)."""
    try:
        return int(value, 10) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return default


def on(value):
    """A switch (``true``, ``'yes'``, ``1``) the way Ansible's ``bool`` filter reads it."""
    return boolean(value, strict=False)
