# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_default
author: sparkfleet.gb10 developers
short_description: Read a default that several roles share
version_added: "0.1.0"
description:
  - Returns a default from C(plugins/module_utils/fleet_defaults.py), the one place for a path or name that one role
    writes and others read (the virtualenv, the NCCL environment file, the Ray token, the vLLM secrets directory, the
    model store, the service account, the fabric interface).
  - Role defaults read it here, after the inventory's C(sparkfleet_*) variable where there is one, instead of
    writing the value again.
options:
  _terms:
    description: Names, for example C(venv_path), C(nccl_env_file), C(ray_auth_token_file).
    type: list
    elements: str
    required: true
notes:
  - An unknown name fails and lists the known names.
"""

EXAMPLES = r"""
- name: The virtualenv, the inventory's first
  ansible.builtin.set_fact:
    my_venv: "{{ sparkfleet_venv_path | default(lookup('sparkfleet.gb10.fleet_default', 'venv_path'), true) }}"
"""

RETURN = r"""
_raw:
  description: The default of each name, in term order.
  type: list
  elements: str
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        out = []
        for term in terms:
            try:
                out.append(fleet_default(term))
            except KeyError as exc:
                raise AnsibleError("sparkfleet.gb10.fleet_default: %s" % exc.args[0])
        return out
