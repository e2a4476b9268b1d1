# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A unit's state as one ``systemctl show`` reads it: the command (filter unit_show) and the judgement of its
answer (filter unit_settled) ask and read the same properties, defined once here."""

from __future__ import annotations

# The properties asked and judged.
PROPERTIES = ("UnitFileState", "ActiveState")


def show_command(unit, name=None):
    """A ``host_read`` command record that asks systemd for ``unit``'s PROPERTIES."""
    return {"name": name or unit, "argv": ["systemctl", "show", unit, "--property=" + ",".join(PROPERTIES)]}


def unit_properties(result):
    """``{property: value}`` of a ``systemctl show --property=...`` answer; {} when the command failed."""
    if not isinstance(result, dict) or result.get("rc") != 0:
        return {}
    props = {}
    for line in str(result.get("stdout") or "").splitlines():
        name, sep, value = line.partition("=")
        if sep:
            props[name.strip()] = value.strip()
    return props


def settled(result, enabled=None, active=True):
    """Whether the answer says the unit is active (``active``) and enabled or disabled (``enabled``) as wanted;
    None leaves that side unjudged. A failed command is never settled."""
    props = unit_properties(result)
    if not props:
        return False
    if active is not None and (props.get("ActiveState") == "active") != bool(active):
        return False
    if enabled is None:
        return True
    return props.get("UnitFileState") == ("enabled" if enabled else "disabled")
