# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter fleet_host: one host's part of the fleet plan, the one way roles and playbooks read the plan."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_host
author: sparkfleet.gb10 developers
short_description: One host's view of the fleet plan - its services, endpoints, models and Ray cluster
version_added: 0.1.0
description:
  - What a host does in the fleet plan that preflight (or the role C(sparkfleet.gb10.plan), for a role run on its
    own) stored as C(ansible_facts.sparkfleet_plan); the computation is
    C(plugins/module_utils/fleet_plan.py)'s C(host_view).
  - Every role and playbook reads the plan through this filter, so none plans again and none reads C(groups) or
    C(hostvars) for what the plan says.
  - Fails, naming the fix, when there is no plan or it does not hold the host.
options:
  _input:
    description: The inventory name of the host.
    type: str
    required: true
  plan:
    description: The fleet plan (C(ansible_facts.sparkfleet_plan)).
    type: dict
    required: true
  unit_prefix:
    description: The prefix of the vLLM unit names a role uses (empty - the plan's, from C(vllm_service_unit_prefix)).
    type: str
  vllm_bin:
    description: The C(vllm) program the services run (put into each service's C(cluster)).
    type: str
"""

EXAMPLES = r"""
_vllm_service_host: >-
  {{ inventory_hostname | sparkfleet.gb10.fleet_host(ansible_facts.sparkfleet_plan,
     unit_prefix=vllm_service_unit_prefix, vllm_bin=vllm_service_venv_path ~ '/bin/vllm') }}
ray_worker_head_host: "{{ (inventory_hostname | sparkfleet.gb10.fleet_host(ansible_facts.sparkfleet_plan)).ray.head }}"
"""

RETURN = r"""
_value:
  description:
    - C(name), C(fabric_address), C(models) (every entry the host is a node of, with its layout), C(services) (the
      vLLM units it runs - C(name), C(unit), C(port), C(served_name), C(rank), C(role), C(serves_api), C(nodes),
      C(cluster), C(entry), C(model)), C(endpoints) (the services that serve the API), C(ray_role) (C(ray_head),
      C(ray_worker) or null) and C(ray) (its Ray cluster - C(members), C(head), C(workers), C(gcs_port),
      C(dashboard_port), C(address); empty for a host in none).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp


def fleet_host(host, plan, unit_prefix=None, vllm_bin=None):
    """``host``'s view of the stored fleet plan (``fleet_plan.host_view``)."""
    try:
        return fp.host_view(plan, host, unit_prefix or None, vllm_bin or None)
    except fp.PlanError as exc:
        raise AnsibleFilterError("fleet_host: %s" % exc)


class FilterModule(object):

    def filters(self):
        return {"fleet_host": fleet_host}
