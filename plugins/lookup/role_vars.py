# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
from __future__ import annotations

DOCUMENTATION = r"""
name: role_vars
author: sparkfleet.gb10 developers (!UNKNOWN)
short_description: A role's settings as its tasks see them, in one mapping
version_added: "0.1.0"
description:
  - Templates every option of a role (its C(meta/argument_specs.yml), main entry point; the role's defaults) as the
    task sees it (the inventory's value, C(-e), else the role's default) and returns them in one mapping, each keyed
    by its name without the role's prefix (C(fleet_health_timeout) is C(timeout)).
  - So a role's C(vars/) hands its settings to a tested filter in one line, instead of a mapping of templates
    (C(plugins/module_utils/role_vars.py)).
  - An option the play does not define (the role's defaults not loaded) is left out.
options:
  _terms:
    description: Role names, for example C(fleet_health).
    type: list
    elements: str
    required: true
notes:
  - A role without options fails and lists the roles that have some.
"""

EXAMPLES = r"""
_fleet_health_settings: "{{ lookup('sparkfleet.gb10.role_vars', 'fleet_health') }}"
# {'timeout': 60, 'textfile_dir': '/var/lib/prometheus/node-exporter', ...}
"""

RETURN = r"""
_raw:
  description: One mapping per role, in term order.
  type: list
  elements: dict
  sample: [{timeout: 60, textfile_dir: /var/lib/prometheus/node-exporter, ray: true}]
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils import role_vars


class LookupModule(LookupBase):
    """Each role's options (``role_vars.options``), templated with the task's variables."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables or {}
        out = []
        for role in terms:
            try:
                names = role_vars.options(role)
            except KeyError as exc:
                raise AnsibleError("sparkfleet.gb10.role_vars: %s" % exc.args[0])
            out.append(dict((role_vars.short_name(role, name), self._templar.template(variables[name]))
                            for name in names if name in variables))
        return out
