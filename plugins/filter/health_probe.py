# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters health_endpoints, health_peers and health_probe_config of the fleet_health role (documented in the .yml
files of those names beside this file); the logic is plugins/module_utils/health_probe.py."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import health_probe as hp


def health_endpoints(view, secrets_dir):
    return hp.endpoints(view, secrets_dir)


def health_peers(hosts, hostvars, host):
    return hp.peers(hosts, hostvars, host)


def health_probe_config(view, settings, peers, fabric_address=None):
    return hp.probe_config(view, settings, peers, fabric_address)


class FilterModule(object):

    def filters(self):
        return {"health_endpoints": health_endpoints, "health_peers": health_peers,
                "health_probe_config": health_probe_config}
