# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin: build or confirm the fleet plan stored on a host (documentation: plugins/modules/stored_plan.py)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("hosts", "fleet_hosts"))

    def run(self, tmp=None, task_vars=None):
        """The fleet plan every reader needs, for the host this task runs for: the one stored this run where it
        covers the fleet and was built from the variables the hosts have now (preflight's), else built here from
        the hosts' variables and facts with the plan's one function (``fleet_plan.build``, memory arithmetic
        included), for a role run without preflight."""
        result = super(ActionModule, self).run(tmp, task_vars)
        groups = task_vars.get("groups") or {}
        hosts = list(self._task.args.get("hosts") or task_vars.get("ansible_play_hosts_all") or [])
        fleet = self._task.args.get("fleet_hosts") or groups.get("sparks") or groups.get("all") or []
        hosts += [host for host in fleet if host not in hosts]
        stored = (task_vars.get("ansible_facts") or {}).get("sparkfleet_plan")
        all_hostvars = task_vars["hostvars"]
        try:
            inputs = dict((host, fleet_plan.plain_data(fleet_plan.plan_inputs(all_hostvars[host]))) for host in hosts)
            if fleet_plan.covers(stored, hosts, fleet_plan.inputs_digest(inputs)):
                result.update(changed=False, plan=None, msg="The fleet plan of this run is stored on this host")
                return result
            plan = fleet_plan.plain_data(fleet_plan.build(inputs))
        except (fleet_plan.PlanError, KeyError) as exc:
            result.update(failed=True, changed=False, msg=("The fleet cannot be planned: %s (playbooks/preflight.yml "
                                                           "names the variable and the fix)" % exc))
            return result
        result.update(changed=False, plan=plan, ansible_facts={"sparkfleet_plan": plan},
                      msg="Planned %d host(s) (no stored plan: a role run without preflight)" % len(hosts))
        return result
