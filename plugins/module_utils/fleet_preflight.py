# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Whole-inventory checks that run before anything changes.

Each check returns a list of :class:`Finding`: the host, the variable, the value
and the fix. The ``sparkfleet.gb10.fleet_preflight`` action runs every check and
reports all findings together, never only the first one.

Pure Python apart from Ansible's argument-spec validator, so the checks are unit
tested directly.
"""

from __future__ import annotations

import difflib
import os

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator


class Finding(object):
    """One problem of the inventory or of a host, with the fix."""

    __slots__ = ("host", "variable", "value", "problem", "fix")

    def __init__(self, host, variable, value, problem, fix):
        self.host = host
        self.variable = variable
        self.value = value
        self.problem = problem
        self.fix = fix

    def as_dict(self):
        return {
            "host": self.host,
            "variable": self.variable,
            "value": self.value,
            "problem": self.problem,
            "fix": self.fix,
        }

    def __str__(self):
        return "%s: %s=%r: %s. Fix: %s" % (self.host, self.variable, self.value, self.problem, self.fix)

    def __repr__(self):
        return "Finding(%s)" % self


def load_role_specs(roles_dir):
    """Return ``{role: {option: spec}}`` from every ``roles/*/meta/argument_specs.yml``."""
    specs = {}
    if not os.path.isdir(roles_dir):
        return specs
    for role in sorted(os.listdir(roles_dir)):
        path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            continue
        with open(path) as handle:
            data = yaml.safe_load(handle) or {}
        options = {}
        for entry in (data.get("argument_specs") or {}).values():
            options.update((entry or {}).get("options") or {})
        specs[role] = options
    return specs


def _strip_required(spec):
    """A copy of an option spec that checks type/choices only (defaults apply later)."""
    spec = dict(spec)
    spec.pop("required", None)
    spec.pop("default", None)
    spec.pop("description", None)
    spec.pop("version_added", None)
    if isinstance(spec.get("options"), dict):
        spec["options"] = dict((k, _strip_required(v)) for k, v in spec["options"].items())
    return spec


def check_variable_types(host, host_vars, role_specs):
    """Type, choices and sub-option checks of every role variable the inventory sets."""
    findings = []
    for role, options in sorted(role_specs.items()):
        for name, spec in sorted(options.items()):
            if name not in host_vars:
                continue
            value = host_vars[name]
            validator = ArgumentSpecValidator({name: _strip_required(spec)})
            result = validator.validate({name: value})
            for message in result.error_messages:
                findings.append(Finding(
                    host, name, value, message,
                    "set %s as roles/%s/meta/argument_specs.yml describes it (type %s%s)" % (
                        name, role, spec.get("type", "str"),
                        ", one of %s" % ", ".join(str(c) for c in spec["choices"]) if spec.get("choices") else ""),
                ))
    return findings


def known_prefixes(role_specs, extra=("sparkfleet_",)):
    """Variable prefixes owned by this collection: one per role, plus the fleet-wide one."""
    return tuple(sorted(set(["%s_" % role for role in role_specs] + list(extra))))


def check_unknown_variables(host, host_vars, role_specs, prefixes=None):
    """Misspelt or unknown variables that carry one of our prefixes."""
    known = set()
    for options in role_specs.values():
        known.update(options)
    prefixes = prefixes or known_prefixes(role_specs)
    findings = []
    for name in sorted(host_vars):
        if name in known or name.startswith("_") or not name.startswith(prefixes):
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        fix = ("did you mean %s?" % close[0]) if close else (
            "remove it; the variables this collection reads are listed in roles/*/meta/argument_specs.yml")
        findings.append(Finding(host, name, host_vars[name], "unknown variable: no role of sparkfleet.gb10 reads it", fix))
    return findings


def check_fleet(fleet, role_specs):
    """Every check over ``{host: hostvars}``; returns all findings, sorted by host."""
    findings = []
    for host in sorted(fleet):
        host_vars = fleet[host]
        findings.extend(check_variable_types(host, host_vars, role_specs))
        findings.extend(check_unknown_variables(host, host_vars, role_specs))
    return findings
