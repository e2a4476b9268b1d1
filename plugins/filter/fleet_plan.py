# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

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


def ray_ports(ports, role):
    """A Ray role's port map: ``ports`` (the role's ``<role>_ports`` as the play sees it) merged over the role's
    default key by key (``fleet_plan.ray_ports``)."""
    if ports is not None and not isinstance(ports, dict):
        raise AnsibleFilterError("ray_ports: %s_ports must be a mapping of Ray port names to ports, got %r" % (role, ports))
    return fp.ray_ports(role, {role + "_ports": ports} if ports is not None else None)


def ray_head_port(head, hostvars=None, name="gcs"):
    """Port ``name`` of the Ray head ``head`` (its ``ray_head_ports``, else the ray role's default)."""
    head_vars = fp.plan_inputs(hostvars[head]) if hostvars is not None and head in hostvars else {}
    port = fp.head_port(name, head_vars)
    if port is None:
        raise AnsibleFilterError("ray_head_port: %s: ray_head_ports has no %s port" % (head, name))
    return port


def ray_gcs_port(head, hostvars=None):
    """The GCS port of the Ray head ``head``: ``ray_head_port`` of ``gcs``."""
    return ray_head_port(head, hostvars, "gcs")


def roll_batch_problems(plan, hosts, serial):
    """What each batch of a roll splits (``fleet_plan.roll_batch_problems``): ``{host: {batch, models, message}}`` of
    the hosts whose batch lacks a host that must change with them, the Ray head of a ray-executor model included."""
    try:
        return fp.roll_batch_problems(plan, hosts, serial)
    except fp.PlanError as exc:
        raise AnsibleFilterError("roll_batch_problems: %s" % exc)


def roll_serial(plan):
    """A roll's default batch size (``fleet_plan.roll_serial``): the most hosts that must change together."""
    try:
        return fp.roll_serial(plan)
    except fp.PlanError as exc:
        raise AnsibleFilterError("roll_serial: %s" % exc)


class FilterModule(object):

    def filters(self):
        return {
            "fleet_plan": fleet_plan,
            "fleet_services": fleet_services,
            "ray_cluster": ray_cluster,
            "ray_gcs_port": ray_gcs_port,
            "ray_head_port": ray_head_port,
            "ray_ports": ray_ports,
            "roll_batch_problems": roll_batch_problems,
            "roll_serial": roll_serial,
        }
