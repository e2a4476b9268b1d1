# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.module_utils.fabric_subnet import subnet_problem

try:
    import netaddr
except ImportError:  # reported when used
    netaddr = None


def _network(subnet):
    if netaddr is None:
        raise AnsibleFilterError("the fabric_address filters need the python netaddr library on the controller")
    # The judgement preflight makes first (fleet_preflight.check_fabric), written once.
    net, problem = subnet_problem(subnet)
    if problem:
        raise AnsibleFilterError("fabric subnet %r %s. Fix: %s" % (subnet, problem[0], problem[1]))
    return net


def address_problems(address, net):
    """Reasons ``address`` cannot be a fabric host address in ``net`` (empty when fine)."""
    try:
        ip = netaddr.IPAddress(str(address).split("/", 1)[0])
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return ["%r is not an IPv4 address" % (address,)]
    if ip not in net:
        return ["%s is outside %s" % (ip, net)]
    if net.prefixlen < 31 and ip == net.network:
        return ["%s is the network address of %s" % (ip, net)]
    if net.prefixlen < 31 and ip == net.broadcast:
        return ["%s is the broadcast address of %s" % (ip, net)]
    return []


def fabric_address(subnet, index, start=0, prefix=False):
    net = _network(subnet)
    for name, value in (("index", index), ("start", start)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise AnsibleFilterError("fabric_address: %s must be an integer >= 0, got %r" % (name, value))
    ip = netaddr.IPAddress(int(net.network) + start + index)
    problems = address_problems(ip, net) if int(ip) <= int(net.broadcast) else ["%s is outside %s" % (ip, net)]
    if problems:
        raise AnsibleFilterError("fabric_address: index %d (start %d) gives %s; pick a smaller index/start or a larger "
                                 "subnet" % (index, start, problems[0]))
    return "%s/%d" % (ip, net.prefixlen) if prefix else str(ip)


def fabric_addresses_check(addresses, subnet):
    """``addresses`` is {host: address} or a list of addresses; returns it unchanged or fails listing every problem."""
    net = _network(subnet)
    if isinstance(addresses, dict):
        items = list(addresses.items())
    elif isinstance(addresses, list):
        items = [("#%d" % i, a) for i, a in enumerate(addresses)]
    else:
        raise AnsibleFilterError("fabric_addresses_check: expected {host: address} or a list, got %r" % (addresses,))
    problems = []
    seen = {}
    for host, address in items:
        for problem in address_problems(address, net):
            problems.append("host %s: %s" % (host, problem))
        key = str(address).split("/", 1)[0]
        if key in seen:
            problems.append("host %s: %s is also used by host %s" % (host, key, seen[key]))
        seen.setdefault(key, host)
    if problems:
        raise AnsibleFilterError("fabric addresses in %s are not usable: %s. Give each host its own address inside "
                                 "the subnet" % (net, "; ".join(problems)))
    return addresses


class FilterModule(object):

    def filters(self):
        return {
            "fabric_address": fabric_address,
            "fabric_addresses_check": fabric_addresses_check,
        }
