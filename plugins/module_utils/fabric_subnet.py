# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What makes a fabric subnet usable, written once: the fabric_address filters (qsfp_network computes each half's
address with them) refuse what ``subnet_problem`` names, and preflight (``fleet_preflight.check_fabric``) names it
first, before any host changed."""

from __future__ import annotations

try:
    import netaddr
except ImportError:  # reported by the callers
    netaddr = None


def subnet_problem(subnet):
    """``(net, None)`` for a usable IPv4 network in CIDR form, else ``(None, (problem, fix))``."""
    try:
        net = netaddr.IPNetwork(str(subnet))
        if "/" not in str(subnet):
            raise ValueError("no prefix length")
    except (netaddr.AddrFormatError, ValueError, TypeError) as exc:
        return None, ("is not a CIDR network such as 192.168.100.0/24: %s" % exc,
                      "write it as network/prefix, e.g. 192.168.100.0/24")
    if net.version != 4:
        return None, ("must be IPv4 (RoCE v2 GIDs are picked by IPv4 address)", "write an IPv4 network, e.g. "
                      "192.168.100.0/24")
    if net.ip != net.network:
        return None, ("has host bits set: the network role computes the fabric addresses from the network and "
                      "refuses it", "write the network address, %s/%d" % (net.network, net.prefixlen))
    return net, None
