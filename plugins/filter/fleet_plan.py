# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_plan
author: sparkfleet.gb10 developers
short_description: The fleet plan - clusters, heads, ranks, services, Ray head and GCS port
version_added: "0.1.0"
description:
  - The plan of the whole fleet from each host's variables (C(sparkfleet_models) or C(vllm_service_models),
    C(group_names), C(sparkfleet_cluster), C(sparkfleet_executor), C(sparkfleet_fabric_address),
    C(vllm_service_node_ip), C(ray_head_ports), C(ray_worker_ports)); the computation lives in
    C(plugins/module_utils/fleet_plan.py), which preflight checks the inventory with.
  - Fails naming the host and the model for an inventory that cannot be planned (preflight names it first, with the fix).
  - The roles do not plan with it; they read the plan of the run (stored by preflight, or by the role
    C(sparkfleet.gb10.plan)) through C(sparkfleet.gb10.fleet_host). This filter plans from a role's own model list
    (C(model_store_models)) and gives tests their expectations.
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts of the fleet (e.g. C(ansible_play_hosts_all) or C(groups['sparks'])).
    type: list
    elements: str
    required: true
  models_var:
    description:
      - A role's own variable of model entries (C(model_store_models)); where a host sets it, its entries stand for
        those vllm_service serves in that host's part of the plan.
    type: str
"""

EXAMPLES = r"""
- name: Plan the fleet once
  ansible.builtin.set_fact:
    _plan: "{{ hostvars | sparkfleet.gb10.fleet_plan(ansible_play_hosts_all, models_var='model_store_models') }}"
  run_once: true
"""

RETURN = r"""
_value:
  description:
    - C(hosts) (per host C(models), C(services), C(ray_role), C(ray_cluster), C(fabric_address)), C(models) (each multi-node
      model's C(name), C(nodes), C(head), C(executor), C(master_addr), C(master_port), C(port)) and C(ray) (per
      cluster C(members), C(head), C(workers), C(gcs_port), C(dashboard_port), C(address)).
    - A service is C(name), C(unit), C(port), C(served_name) (the name clients ask for), C(rank), C(role) (head or follower), C(serves_api), C(nodes), C(head),
      C(executor), C(nnodes), C(master_addr), C(master_port), C(cluster) (the C(vllm_args) cluster), C(entry) (without
      placement keys) and C(model) (the entry as written).
    - A host's C(models) are the entries it is a node of, whose weights it needs (followers of the ray executor,
      which run no unit, included), each with its layout (C(nodes), C(head), C(rank), C(role), C(executor), ...),
      C(name), C(index) (its place in the host's list), C(runs_unit), C(entry) and C(model).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan as fp


def _address_of(hostvars, fallback=None):
    """A node's fabric address as the plan reads it, templating only the two variables it is read from."""
    def address_of(host):
        if hostvars is None or host not in hostvars:
            return fallback
        node_vars = hostvars[host]
        found = dict((name, node_vars[name]) for name in fp.ADDRESS_INPUTS if name in node_vars)
        return fp.fleet_address_of({host: found})(host) or fallback
    return address_of


def fleet_plan(hostvars, hosts, models_var=None):
    """The plan of ``hosts``, planned from ``hostvars`` with the plan's own function (a role's own model list, a
    test's expectation); the roles read the plan of the run through ``fleet_host``."""
    try:
        return fp.build(dict((host, fp.plan_inputs(hostvars[host], models_var)) for host in hosts))
    except (fp.PlanError, KeyError) as exc:
        raise AnsibleFilterError("fleet_plan: %s (run playbooks/preflight.yml: it names the fix)" % exc)


def fleet_services(models, host, hostvars=None, executor=None, unit_prefix=None, vllm_bin=None, address=None):
    """The services of ``host`` planned from its model entries ``models``; a multi-node model's master address is
    its first node's (``hostvars``), else ``address``. ``unit_prefix`` None: the plan's unit names (the host's
    ``vllm_service_unit_prefix``, else that role's default)."""
    if not isinstance(models, list):
        raise AnsibleFilterError("fleet_services: %s: the model entries must be a list, got %r" % (host, models))
    try:
        if not unit_prefix and hostvars is not None and host in hostvars:
            unit_prefix = fp.unit_prefix_of(fp.plan_inputs(hostvars[host]))
        return fp.services(host, models, executor, _address_of(hostvars, address), unit_prefix, vllm_bin)
    except fp.PlanError as exc:
        raise AnsibleFilterError("fleet_services: %s" % exc)


def ray_cluster(host, hostvars, hosts=None):
    """The Ray cluster ``host`` belongs to: ``{members, head, workers, gcs_port, dashboard_port, address}``; ``{}``
    for a host in no Ray group, from the Ray part of the plan alone (``fleet_plan.ray_clusters``) over ``hosts``
    (the hosts of the Ray groups)."""
    hosts = list(hosts or []) + ([] if host in (hosts or []) else [host])
    missing = [h for h in hosts if hostvars is None or h not in hostvars]
    if missing:
        raise AnsibleFilterError("ray_cluster: %s not in hostvars" % ", ".join(missing))
    fleet = dict((h, fp.plan_inputs(hostvars[h])) for h in hosts)
    if fp.ray_role(fleet[host].get("group_names")) is None:
        return {}
    return dict(fp.ray_clusters(fleet).get(fp.cluster_name(fleet[host])) or {})


def ray_head_port(head, hostvars=None, name="gcs"):
    """Port ``name`` of the Ray head ``head`` (its ``ray_head_ports``, else the ray_head role's default)."""
    head_vars = fp.plan_inputs(hostvars[head]) if hostvars is not None and head in hostvars else {}
    port = fp.head_port(name, head_vars)
    if port is None:
        raise AnsibleFilterError("ray_head_port: %s: ray_head_ports has no %s port" % (head, name))
    return port


def ray_gcs_port(head, hostvars=None):
    """The GCS port of the Ray head ``head``: ``ray_head_port`` of ``gcs``."""
    return ray_head_port(head, hostvars, "gcs")


class FilterModule(object):

    def filters(self):
        return {"fleet_plan": fleet_plan}
