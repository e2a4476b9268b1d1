# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of sparkfleet.gb10.host_files (documentation: plugins/modules/host_files.py): renders each entry's
role template (``template``, with ``template_vars``) or reads its role file (``role_file``) on the controller, as
``lookup('ansible.builtin.template')`` and ``lookup('ansible.builtin.file', rstrip=false)`` do, and hands the
module the content. A role's file list can then be plain data made by a tested filter, with no Jinja program in
the role's vars to render the content of each entry."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader

SOURCES = ("template", "role_file")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("files",))

    def _lookup(self, name):
        return lookup_loader.get(name, loader=self._loader, templar=self._templar)

    def _rendered(self, entry, task_vars):
        """The entry with its content where it names a template or a role file; as given otherwise."""
        if not isinstance(entry, dict):
            return entry
        named = [key for key in SOURCES if entry.get(key)]
        if not named:
            return entry
        path = entry.get("path", "?")
        if len(named) > 1 or entry.get("content") is not None:
            raise AnsibleActionFail("host_files entry %s: give one of content, template and role_file (it has %s)"
                                    % (path, ", ".join((["content"] if entry.get("content") is not None else [])
                                                       + named)))
        if entry.get("state", "file") != "file":
            raise AnsibleActionFail("host_files entry %s: %s needs state file (it has state %s)"
                                    % (path, named[0], entry.get("state")))
        out = dict((key, value) for key, value in entry.items() if key not in SOURCES + ("template_vars",))
        if named[0] == "template":
            out["content"] = self._lookup("ansible.builtin.template").run(
                [entry["template"]], variables=task_vars, template_vars=entry.get("template_vars") or {})[0]
        else:
            out["content"] = self._lookup("ansible.builtin.file").run(
                [entry["role_file"]], variables=task_vars, rstrip=False)[0]
        return out

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        files = args.get("files")
        try:
            if isinstance(files, list):
                args["files"] = [self._rendered(entry, task_vars) for entry in files]
        except AnsibleActionFail as exc:
            result.update(exc.result)
            return result
        result.update(self._execute_module(module_name="sparkfleet.gb10.host_files", module_args=args,
                                           task_vars=task_vars))
        return result
