# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
from __future__ import annotations

DOCUMENTATION = r"""
name: setting_problems
author: sparkfleet.gb10 developers (!UNKNOWN)
short_description: What is wrong with a role's own settings, judged as preflight judges them
version_added: "0.1.0"
description:
  - "Templates the variables a role's settings checks read (C(plugins/module_utils/role_settings.py)) as the role sees
    them and returns one line per problem, C(host: variable=value: problem. Fix: fix)."
  - Preflight makes the same checks over the inventory before anything changes (C(fleet_preflight.check_role_settings));
    a role's own preflight asserts this lookup is empty, so a role run on its own refuses what preflight refuses.
options:
  _terms:
    description: Role names, for example C(qsfp_network).
    type: list
    elements: str
    required: true
notes:
  - A role with no settings checks fails and lists those that have some.
"""

EXAMPLES = r"""
- name: Check the role's settings (preflight made the same checks first)
  ansible.builtin.assert:
    that: _problems | length == 0
    fail_msg: "{{ _problems | join('; ') }}"
    quiet: true
  vars:
    _problems: "{{ lookup('sparkfleet.gb10.setting_problems', 'qsfp_network', wantlist=True) }}"
"""

RETURN = r"""
_raw:
  description: One line per problem, in the roles' order; empty when the settings are sound.
  type: list
  elements: str
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils import role_settings


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        variables = variables or {}
        host = variables.get("inventory_hostname", "?")
        out = []
        for role in terms:
            if role not in role_settings.roles():
                raise AnsibleError("sparkfleet.gb10.setting_problems: no settings checks for role %r (roles: %s)"
                                   % (role, ", ".join(role_settings.roles())))
            settings = {}
            for name in role_settings.variables(role):
                if name in variables:
                    settings[name] = self._templar.template(variables[name])
            out.extend(role_settings.message(host, problem, settings)
                       for problem in role_settings.problems(role, settings))
        return out
