# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of sparkfleet.gb10.role_state (documentation: plugins/modules/role_state.py): digests the role's
inputs on the controller (the task's ``inputs``, the role's settings as its argument spec names them, the role's
files and the collection's plugins) and hands the module the digest alone, so no setting or secret travels."""

from __future__ import annotations

import hashlib
import os

import yaml

from ansible.plugins.action import ActionBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils import role_state as rs

PLUGINS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CODE = {}


def _tree_digest(top):
    """sha256 over every file below ``top`` (relative path and bytes, in sorted order); cached per process."""
    if top in _CODE:
        return _CODE[top]
    sha = hashlib.sha256()
    for base, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".pyc"):
                continue
            path = os.path.join(base, name)
            sha.update(os.path.relpath(path, top).encode("utf-8") + b"\0")
            with open(path, "rb") as handle:
                sha.update(handle.read())
            sha.update(b"\0")
    _CODE[top] = sha.hexdigest()
    return _CODE[top]


def setting_names(role_path):
    """The variables the role's ``meta/argument_specs.yml`` names (its entry point ``main``)."""
    try:
        with open(os.path.join(role_path, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
            specs = yaml.safe_load(handle) or {}
    except OSError:
        return []
    return sorted(((specs.get("argument_specs") or {}).get("main") or {}).get("options") or {})


# The host fact naming each role confirmed converged in this run, with the read-only checks that passed:
# {role: [check names]}. A role that drifted is left out (it ran in full). Later plays read it to leave out a gate
# whose proof this run already made (fleet_verify's jumbo-frame and NCCL gates; filter fabric_confirmed).
CONFIRMED = rs.CONFIRMED_FACT


def judged(host, role, result):
    """The check's RESULT where the role is not converged: a line that names the host, the role and each difference
    (the module's, with those the role found itself, option ``drift``), shown whatever the verbosity."""
    if not result.get("converged"):
        result["msg"] = "%s: %s runs in full: %s" % (host, role, "; ".join(result.get("drift") or []))
        result["_ansible_verbose_always"] = True
    return result


def confirmed(task_vars, role, result):
    """The fact CONFIRMED after a check of ROLE: the host's earlier value with ROLE set (converged) or removed."""
    out = rs.confirmations(task_vars.get("ansible_facts"))
    out.pop(role, None)
    if result.get("converged"):
        out[role] = list(result.get("checked") or [])
    return out


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("role", "state", "inputs", "paths", "stat_paths", "units", "packages", "checks", "facts",
                             "store", "drift"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        role = self._task._role
        role_path = role._role_path if role is not None else None
        if not role_path:
            result.update(failed=True, changed=False, msg="role_state runs inside a role (it digests the role's code)")
            return result
        settings = dict((name, self._templar.template(task_vars[name]))
                        for name in setting_names(role_path) if name in task_vars)
        inputs = {"inputs": args.pop("inputs", None), "settings": settings,
                  "role": _tree_digest(role_path), "plugins": _tree_digest(PLUGINS)}
        args["digest"] = rs.digest(inputs)
        result.update(self._execute_module(module_name="sparkfleet.gb10.role_state", module_args=args,
                                           task_vars=task_vars))
        if args.get("state", "check") == "check" and not result.get("failed"):
            judged(task_vars.get("inventory_hostname"), self._task.args["role"], result)
            result["ansible_facts"] = {CONFIRMED: confirmed(task_vars, self._task.args["role"], result)}
        return result
