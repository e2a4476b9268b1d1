# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_default
author: sparkfleet.gb10 developers (!UNKNOWN)
short_description: Read a default that several roles share
version_added: "0.1.0"
extends_documentation_fragment:
  - sparkfleet.gb10.named_values
description:
  - Returns a default from C(plugins/module_utils/fleet_defaults.py), the one place for a path or name that one role
    writes and others read (the virtualenv, the NCCL environment file, the Ray token, the vLLM secrets directory, the
    model store, the service account, the fabric interface).
  - Where the default has an inventory variable (C(sparkfleet_venv_path), C(sparkfleet_service_user),
    C(sparkfleet_model_store_dir), C(sparkfleet_fabric_ifname), and the Ray units' C(ray_head_service_name) and
    C(ray_worker_service_name)), the host's value of that variable comes first, an empty one counting as unset. So
    the rule "the inventory's value, else the default" is written here once, and every reader asks the lookup alone.
  - A role default that itself defers to this lookup (C(ray_head_service_name) in the ray role's defaults) is not an
    inventory value and is passed over.
options:
  _terms:
    description: Names, for example C(venv_path), C(nccl_env_file), C(ray_auth_token_file).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: The virtualenv, the inventory's first
  ansible.builtin.set_fact:
    my_venv: "{{ lookup('sparkfleet.gb10.fleet_default', 'venv_path') }}"
"""

RETURN = r"""
_raw:
  description: Each name's value (the host's inventory variable where it sets one, else the default), in term order.
  type: list
  elements: str
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default, inventory_variable

# How a role default that defers to this lookup reads: its value is the lookup, not a choice of the inventory's.
_SELF = "sparkfleet.gb10.fleet_default"


class LookupModule(LookupBase):
    def _inventory_value(self, variables, name):
        """The host's value of the inventory variable of ``name``; None where there is none, it is empty, or it is
        a role default that defers to this lookup."""
        var = inventory_variable(name)
        if not var or not variables or var not in variables:
            return None
        raw = variables[var]
        if raw is None or (isinstance(raw, str) and (raw.strip() == "" or _SELF in raw)):
            return None
        value = self._templar.template(raw)
        return None if value is None or (isinstance(value, str) and value.strip() == "") else value

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        out = []
        for term in terms:
            try:
                default = fleet_default(term)
            except KeyError as exc:
                raise AnsibleError("sparkfleet.gb10.fleet_default: %s" % exc.args[0])
            value = self._inventory_value(variables, term)
            out.append(default if value is None else value)
        return out
