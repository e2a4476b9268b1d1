# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_firewall_plan
author: sparkfleet.gb10 developers
short_description: The fabric firewall of one host - internal ports, API ports and the nftables table
version_added: "0.1.0"
description:
  - Computes, from the variables the services themselves read, the ports of a host that only the fabric may reach
    (the Ray role's C(*_ports) of the host's Ray group with the worker range, the C(master_port) of each
    multi-node C(mp) model the host is a node of, C(model_store_rsync_port) on hosts holding a model with a
    C(source), C(nccl_rsync_port) while C(nccl_build_once) is on (any host may be the builder that serves its
    group the NCCL prefix), the page-cache drop port on a member of a multi-node model (any node but the first,
    where its head asks it to drop its page cache, rule members_drop_page_cache), and C(extra_internal_ports)) and
    the API ports it serves (C(port) of each entry whose first node it is). A role default is read from that
    role's C(defaults/main.yml) when the variable is not given, and the entry defaults from the model entry schema, so no port number is written twice.
  - Finds the fabric interfaces in C(ip -j addr) output (netdevs matching the rule book's C(qsfp_netdev_pattern)
    that hold an IPv4 address) unless C(interfaces) names them.
  - Returns the plan with the text of the nftables file (table C(inet sparkfleet)) and its digest.
  - Fails naming the variable and the value for a port that is not a port, a source that is not a CIDR, an API
    port that is also internal, or a host without a fabric address.
options:
  _input:
    description:
      - C(host) (inventory name), C(groups) (its group names), C(links) (C(ip -j addr) output, parsed),
        C(api_sources) (CIDRs; empty = the networks of the default route's interface, from C(management_devs),
        gb10_facts' C(management.devs), or else C(routes), the C(ip -j route show default) output), and optionally
        C(interfaces) (fabric netdev names), C(models) (model entries),
        C(executor), C(ray_head_ports), C(ray_worker_ports), C(rsync_port) (model_store's), C(nccl_rsync_port),
        C(nccl_build_once) (absent or none for the nccl role's default), C(page_cache_port) (vllm_service's; absent or
        none for the fleet default), C(extra_internal_ports),
        C(ephemeral) (C([low, high]) of new TCP connections dropped unless from the fabric, or empty),
        C(allow_no_fabric) (return C(ready=false) instead of failing when the host has no fabric address yet).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Plan the firewall of this host
  ansible.builtin.set_fact:
    _plan: >-
      {{ {'host': inventory_hostname, 'groups': group_names, 'links': __ip.stdout | from_json,
          'api_sources': ['10.0.0.0/24'], 'models': sparkfleet_models | default([])}
         | sparkfleet.gb10.fabric_firewall_plan }}
"""

RETURN = r"""
_value:
  description:
    - C(ready), C(interfaces), C(fabric_nets4), C(fabric_addrs4) (and C(6)), C(api_sources4/6), C(internal) and C(api)
      (lists of C([low, high, why])), C(ephemeral), C(ruleset) (the nft file) and C(digest) (carried in the
      live table's comment).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fabric_firewall as fw
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook


def _fabric(data):
    links = data.get("links") or []
    names = data.get("interfaces") or []
    if names:
        wanted = [link for link in links if link.get("ifname") in names]
        found = fw.fabric_interfaces(wanted, r".*")
        missing = sorted(set(names) - set(i["name"] for i in found))
        if missing:
            raise fw.FirewallError("fabric_firewall_interfaces=%r: %s missing or without an IPv4 address on the host"
                                   % (names, ", ".join(missing)))
        return found
    return fw.fabric_interfaces(links, rulebook.setting("qsfp_netdev_pattern"))


def fabric_firewall_plan(data, roles_dir=None):
    if not isinstance(data, dict):
        raise AnsibleFilterError("fabric_firewall_plan: expected a mapping, got %r" % (data,))
    host = data.get("host")
    try:
        internal = fw.internal_ports(
            host, groups=data.get("groups"),
            ray_ports={"ray_head": data.get("ray_head_ports"), "ray_worker": data.get("ray_worker_ports")},
            models=data.get("models"), executor=data.get("executor"), rsync_port=data.get("rsync_port"),
            extra=data.get("extra_internal_ports"), roles_dir=roles_dir or fw.ROLES_DIR,
            nccl_rsync_port=data.get("nccl_rsync_port"), nccl_build_once=data.get("nccl_build_once"),
            page_cache_port=data.get("page_cache_port"))
        api = fw.api_ports(host, data.get("models"))
        ephemeral = data.get("ephemeral")
        if ephemeral:
            if isinstance(ephemeral, str):
                ephemeral = ephemeral.split()
            ephemeral = fw.parse_ports(list(ephemeral), "ephemeral port range")
        fabric = _fabric(data)
        if not fabric and data.get("allow_no_fabric"):
            return {"ready": False, "host": host}
        sources = list(data.get("api_sources") or [])
        derived = not sources
        if derived:
            devs = data.get("management_devs")
            if devs is None:
                devs = [r.get("dev") for r in data.get("routes") or [] if r.get("dev")]
            for link in data.get("links") or []:
                if link.get("ifname") in devs:
                    sources.extend(n for n in fw.management_networks(link.get("addr_info")) if n not in sources)
            if api and not sources:
                raise fw.FirewallError(
                    "fabric_firewall_api_sources=[]: no default route, so no management network to admit the API "
                    "ports %s from; set fabric_firewall_api_sources to your clients' networks, e.g. ['10.0.0.0/24']"
                    % ", ".join(str(a[0]) for a in api))
        plan = fw.plan(host, fabric, sources, internal, api, ephemeral or None)
    except fw.FirewallError as exc:
        raise AnsibleFilterError("%s: %s" % (host, exc))
    plan["ready"] = True
    plan["api_sources_derived"] = derived
    plan["digest"] = fw.digest(plan)
    plan["ruleset"] = fw.ruleset(plan)
    return plan


class FilterModule(object):

    def filters(self):
        return {"fabric_firewall_plan": fabric_firewall_plan}
