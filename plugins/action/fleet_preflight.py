# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin: check the whole inventory before anything changes."""

from __future__ import annotations

import os

from ansible.plugins.action import ActionBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan, redaction
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_preflight as fp
from ansible_collections.sparkfleet.gb10.plugins.module_utils.gpu_memory_utilization import utilization_limits
from ansible_collections.sparkfleet.gb10.plugins.module_utils.nccl_env import nccl_env
from ansible_collections.sparkfleet.gb10.plugins.module_utils.vllm_args import check_entry
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

# Documentation: plugins/modules/fleet_preflight.py
ROLES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "roles")


def _plain_vars(host_vars):
    """The host's variables, templated; a value that cannot be templated is kept as its error."""
    plain = {}
    for name in list(host_vars.keys()):
        try:
            plain[name] = host_vars[name]
        except Exception as exc:  # an undefined reference in inventory is itself a finding for the user
            plain[name] = "<cannot template: %s>" % exc
    return plain


def fleet_checks(roles_dir=ROLES_DIR):
    """The collection's filters and rule book values the deeper checks use (also what the unit tests use)."""
    roles_dir = os.path.normpath(roles_dir)
    return {
        "entry_check": check_entry,
        "gpu_memory_utilization": fleet_plan.split_memory,
        "nccl_env": lambda gb10, fabric, host: nccl_env(gb10, fabric, host=host),
        "forbidden_branches": rulebook.setting("driver_forbidden_branches"),
        "ray_defaults": dict((role, fleet_plan.default_ray_ports(role, roles_dir)) for role in ("ray_head", "ray_worker")),
        "node_exporter_port": fp.load_role_defaults(roles_dir, "fleet_health").get("fleet_health_node_exporter_port"),
        "utilization": dict(zip(("default", "ceiling"), utilization_limits(0, 1)[:2])),
    }


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("hosts", "fleet_hosts"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        # The play's hosts and the rest of the fleet outside --limit: a multi-node model keeps its nodes and a
        # Ray cluster its head, and the inventory is judged the same with or without --limit. Facts exist only
        # for the hosts this run reached; the checks of facts skip the others.
        hosts = list(self._task.args.get("hosts") or [])
        hosts += [host for host in self._task.args.get("fleet_hosts") or [] if host not in hosts]
        all_hostvars = task_vars["hostvars"]
        role_specs = fp.load_role_specs(os.path.normpath(ROLES_DIR))
        fleet = dict((host, _plain_vars(all_hostvars[host])) for host in hosts)
        checks = fleet_checks()
        # The inventory's groups: a host of group ray_head outside group sparks is named as the cluster's missing head.
        groups = (task_vars.get("groups") or {}).items()
        checks["groups"] = fleet_plan.plain_data(dict((name, list(members)) for name, members in groups))
        plan, findings = fp.judge_fleet(fleet, role_specs, checks)
        plan = None if plan is None else fleet_plan.plain_data(plan)
        result["plan"] = plan
        if plan is not None:
            # The fleet plan on every host of the play (run_once hands a result's facts to all of them), for the
            # rest of the run: the roles, verify and the report read it instead of planning again.
            result["ansible_facts"] = {"sparkfleet_plan": plan}
        result["checked_hosts"] = list(hosts)
        result["findings"] = [f.as_dict() for f in findings]
        result["changed"] = False
        # The reasons of open endpoints are the inventory's words: shown through the same redaction as the findings.
        optouts = redaction.redact(fp.optout_warnings(fleet), fp.fleet_secrets(fleet, role_specs))
        if optouts:
            result["warnings"] = ["OPEN ENDPOINT " + line for line in optouts]
        result["api_key_optouts"] = optouts
        if findings:
            result["failed"] = True
            result["msg"] = "Preflight found %d problem(s); nothing was changed:\n%s" % (
                len(findings), "\n".join("- %s" % f for f in findings))
        else:
            result["msg"] = "Preflight: %d host(s) checked, no problems" % len(hosts)
        return result
