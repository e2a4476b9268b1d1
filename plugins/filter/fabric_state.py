# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of what qsfp_network pings and what sparkfleet.gb10.role_state confirms of its fabric; the logic is
plugins/module_utils/fabric_check.py. Each filter is documented in its own .yml file beside this one."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fabric_check
from ansible_collections.sparkfleet.gb10.plugins.module_utils import role_state


def fabric_ping_targets(hostvars, peers, host, present):
    # qsfp_network_peers is a list by the role's argument spec, checked before any task.
    peers_present = {}
    for peer in peers:
        if peer != host and hostvars is not None and peer in hostvars:
            peers_present[peer] = hostvars[peer].get("_qsfp_network_present") or []
    return fabric_check.ping_targets(host, peers, present, peers_present)


def fabric_state_checks(targets, present, mtu, payload, wait=2):
    return fabric_check.state_checks(targets, present, int(mtu), int(payload), int(wait))


def fabric_confirmed(hostvars, hosts):
    return fabric_check.confirmed_everywhere([role_state.host_confirmations(hostvars, host) for host in hosts])


class FilterModule(object):

    def filters(self):
        return {"fabric_ping_targets": fabric_ping_targets, "fabric_state_checks": fabric_state_checks,
                "fabric_confirmed": fabric_confirmed}
