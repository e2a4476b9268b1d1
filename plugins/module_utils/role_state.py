# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A role's converged state, recorded on the host and confirmed in one call (module sparkfleet.gb10.role_state).

A role that ran through records what it manages: the digest of its inputs (its settings, the plan's share of the
host, the role's own code, made on the controller by the module's action), each managed path as it is now (type,
sha256 (a large file: size and modification time) or link target, mode, owner, group), each unit as the role
wants it (enabled, running), each package with its version and hold, and read-only checks that must pass (a service's health). The next run reads the record and
the host together: the role is converged when the digest is the same and nothing differs; then the role's other
tasks need not run. A hand change to a managed file, a unit stopped or disabled, a hold released, a package moved
or a failing check is drift: the role runs in full and puts it right, then records again.

Pure functions over the facts the module reads (path states, ``systemctl show`` and ``dpkg-query`` answers), unit
tested in tests/unit/plugins/module_utils/test_role_state.py.
"""

from __future__ import annotations

import hashlib
import json

RECORD_FORMAT = 1
# The host fact each confirmation leaves (the action plugin): {role: [names of the checks that passed]} of every role
# confirmed converged in this run.
CONFIRMED_FACT = "sparkfleet_confirmed"


def confirmations(facts):
    """{role: [check names]} of every role a host confirmed in this run, from its ``ansible_facts`` (FACTS; None or
    without CONFIRMED_FACT: none). The one reader of the fact: the action keeps it up to date, the filters
    fabric_confirmed and role_confirmed read it."""
    return dict((facts or {}).get(CONFIRMED_FACT) or {})


def host_confirmations(hostvars, host):
    """:func:`confirmations` of HOST as ``hostvars`` holds it (none for a host it lacks)."""
    if hostvars is None or host not in hostvars:
        return {}
    return confirmations(hostvars[host].get("ansible_facts"))


# What systemd reports for a unit and a package's status word that mean what the role wants.
UNIT_PROPERTIES = ("Id", "UnitFileState", "ActiveState")


def digest(inputs):
    """A stable sha256 of JSON-able inputs (keys sorted), as the action makes it on the controller."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_units(stdout):
    """``{unit: {property: value}}`` from one ``systemctl show A B ... --property=Id,UnitFileState,ActiveState``
    (a block per unit, blank line between)."""
    units = {}
    for block in str(stdout or "").split("\n\n"):
        props = {}
        for line in block.splitlines():
            name, sep, value = line.partition("=")
            if sep:
                props[name.strip()] = value.strip()
        if props.get("Id"):
            units[props["Id"]] = props
    return units


def unit_state(props):
    """``{enabled, active}`` of a unit from its properties; None where systemd does not know it."""
    if not props or props.get("UnitFileState", "") in ("", "not-found") and props.get("ActiveState") == "inactive":
        return {"enabled": None, "active": None}
    return {"enabled": props.get("UnitFileState") == "enabled", "active": props.get("ActiveState") == "active"}


def parse_packages(stdout):
    """``{package: {version, hold}}`` from ``dpkg-query -W -f '${Package}\\t${Version}\\t${Status}\\n'``: installed
    packages only (status ``... installed``); hold from the status's first word (the selection)."""
    packages = {}
    for line in str(stdout or "").splitlines():
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        name, version, status = fields
        words = status.split()
        if words and words[-1] == "installed":
            packages[name] = {"version": version, "hold": words[0] == "hold"}
    return packages


def record(role, inputs_digest, paths, units, packages, checks, facts=None):
    """The record of a role that ran through: ``paths`` as the module read them ({path: state}), ``units`` as the role
    wants them ([{name, enabled, active}], None for a side not judged), ``packages`` as read ({name: {version,
    hold}}), the ``checks`` ([{name, argv}]) that must pass and the ``facts`` the full run found (handed back by a
    confirmation, so a converged run need not read them from the host again)."""
    return {"format": RECORD_FORMAT, "role": role, "digest": inputs_digest, "paths": paths,
            "units": dict((unit["name"], {"enabled": unit.get("enabled"), "active": unit.get("active")})
                          for unit in units),
            "packages": packages, "checks": checks, "facts": facts or {}}


def by_stat(state):
    """Whether a recorded path state is of a file recorded by size and modification time (``stat_paths``), not by
    content: it is read the same way again."""
    return "mtime" in (state or {})


def _path_drift(path, want, have):
    if have.get("type") != want.get("type"):
        return "%s is %s, was %s" % (path, have.get("type", "absent"), want.get("type"))
    for key in ("sha256", "size", "mtime", "target", "mode", "owner", "group"):
        if want.get(key) != have.get(key):
            return "%s: %s changed" % (path, "content" if key in ("sha256", "size", "mtime") else key)
    return None


def drift(saved, inputs_digest, paths, units, packages, check_results):
    """What differs between the ``saved`` record and the host now (``paths`` {path: state}, ``units`` {unit:
    properties}, ``packages`` {name: {version, hold}}, ``check_results`` {name: rc}); empty when converged."""
    if not saved:
        return ["no record of a run that went through"]
    if saved.get("format") != RECORD_FORMAT:
        return ["the record is of another format (%s)" % saved.get("format")]
    if saved.get("digest") != inputs_digest:
        return ["the role's inputs or code changed since it last ran through"]
    out = []
    for path, want in sorted((saved.get("paths") or {}).items()):
        problem = _path_drift(path, want, paths.get(path) or {"type": "absent"})
        if problem:
            out.append(problem)
    for name, want in sorted((saved.get("units") or {}).items()):
        have = unit_state(units.get(name))
        for side in ("enabled", "active"):
            if want.get(side) is not None and have[side] != want[side]:
                out.append("unit %s is %s%s" % (name, "" if have[side] else "not ", side))
    for name, want in sorted((saved.get("packages") or {}).items()):
        have = packages.get(name)
        if not have:
            out.append("package %s is not installed" % name)
        elif have.get("version") != want.get("version"):
            out.append("package %s is at %s, was %s" % (name, have.get("version"), want.get("version")))
        elif have.get("hold") != want.get("hold"):
            out.append("package %s is %sheld" % (name, "" if have.get("hold") else "no longer "))
    for check in saved.get("checks") or []:
        if check_results.get(check["name"]) != 0:
            out.append("check %s failed (rc %s)" % (check["name"], check_results.get(check["name"])))
    return out
