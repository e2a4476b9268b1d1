# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The host firewall of sparkfleet.gb10 (role fabric_firewall): which ports are internal,
which are the API, and the nftables table that keeps the internal ones on the fabric.

One source of truth: the ports come from the variables the services read (the ray role's
``*_ports``, the model entries' ``port`` and ``master_port`` with the defaults of the entry
schema, ``model_store_rsync_port``, the NCCL builder's ``nccl_rsync_port``), taking a role's
default from its ``defaults/main.yml`` when the inventory does not set the variable. No port
number is written here.

Pure Python (netaddr and PyYAML only) so that the filter and preflight share it and it is
unit tested directly.
"""

from __future__ import annotations

import hashlib

from ansible.module_utils.parsing.convert_bool import boolean

try:
    import netaddr
except ImportError:  # reported when used
    netaddr = None

from ansible_collections.sparkfleet.gb10.plugins.module_utils import fleet_plan
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_defaults import fleet_default
from ansible_collections.sparkfleet.gb10.plugins.module_utils.fleet_plan import (  # noqa: F401 (the firewall's API)  pylint: disable=unused-import
    RAY_ROLE_BY_GROUP, ROLES_DIR, load_role_default)

TABLE = "sparkfleet"
FAMILY = "inet"
COMMENT_PREFIX = "sparkfleet.gb10 fabric_firewall "


class FirewallError(ValueError):
    """A value the firewall cannot use; the message names the variable, the value and the fix."""


def parse_ports(value, variable):
    """``8000``, ``"20000-20199"`` or ``[a, b]`` (a range) as ``(low, high)``; FirewallError otherwise."""
    low = high = None
    if isinstance(value, bool):
        pass
    elif isinstance(value, int):
        low = high = value
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        low, high = value
    elif isinstance(value, str) and value.strip():
        parts = value.replace(" ", "").split("-")
        if len(parts) in (1, 2) and all(p.isdigit() for p in parts):
            low, high = int(parts[0]), int(parts[-1])
    try:
        low, high = int(low), int(high)
    except (TypeError, ValueError):
        raise FirewallError("%s=%r: not a port or a port range" % (variable, value))
    if not 1 <= low <= high <= 65535:
        raise FirewallError("%s=%r: ports must be 1-65535, low before high" % (variable, value))
    return low, high


def parse_network(value, variable):
    """A CIDR network (IPv4 or IPv6) as netaddr.IPNetwork, host bits allowed; FirewallError otherwise."""
    if not isinstance(value, str) or "/" not in value:
        raise FirewallError("%s=%r: not a network in CIDR form (a.b.c.d/nn or x::/nn)" % (variable, value))
    address, _slash, prefix = value.strip().partition("/")
    try:
        ip = netaddr.IPAddress(address, flags=netaddr.INET_PTON)
        if not prefix.isdigit() or int(prefix) > (32 if ip.version == 4 else 128):
            raise ValueError(prefix)
        return netaddr.IPNetwork("%s/%s" % (ip, int(prefix))).cidr
    except (TypeError, ValueError, netaddr.AddrFormatError):
        raise FirewallError("%s=%r: not a network in CIDR form (a.b.c.d/nn or x::/nn)" % (variable, value))


def model_nodes(model, host):
    """The hosts of a model entry (the fleet plan's); a ``nodes`` that is not a list is a FirewallError:
    preflight's entry check names it, and the plan cannot be made from it."""
    try:
        return fleet_plan.model_nodes(model, host)
    except fleet_plan.PlanError as exc:
        raise FirewallError(str(exc))


def role_value(value, role, name, roles_dir=ROLES_DIR):
    """``value``, else (None) the variable ``name`` of ``role``'s ``defaults/main.yml``: the role's default
    stays the one home of the value, the inventory's variable overrides it."""
    return value if value is not None else load_role_default(role, name, roles_dir)


def internal_ports(host, groups=None, ray_ports=None, models=None, executor=None, rsync_port=None,
                   extra=None, roles_dir=ROLES_DIR, nccl_rsync_port=None, nccl_build_once=None, page_cache_port=None):
    """The ports of this host that only the fabric may reach, each with where it comes from.

    ``ray_ports`` is ``{'ray_head': value-or-None, 'ray_worker': value-or-None}`` (None: the role's default);
    ``rsync_port`` None: model_store's default. ``nccl_build_once`` and ``nccl_rsync_port`` None: the nccl
    role's defaults; with build-once on, any host may be the builder of its group and serve its NCCL prefix
    on ``nccl_rsync_port`` (which one is only known at run time, from the build stamps), so every host
    lists it. ``page_cache_port`` None: the fleet default, where a member of a multi-node model (any node but its
    first) answers its head's page-cache drop requests. Returns ``[(low, high, why), ...]`` sorted.
    """
    found = []
    role = fleet_plan.ray_role(groups)
    if role:
        own = (ray_ports or {}).get(role)
        if own is not None and not isinstance(own, dict):
            raise FirewallError("%s_ports=%r: must be a mapping of Ray port names to ports" % (role, own))
        # As the roles and the plan read it: the inventory's map merged over the role's default key by key.
        ports = fleet_plan.ray_ports(role, {role + "_ports": own} if own is not None else None, roles_dir)
        for key, port in sorted(ports.items()):
            if key in ("min_worker", "max_worker"):
                continue
            low, high = parse_ports(port, "%s_ports.%s" % (role, key))
            found.append((low, high, "%s_ports.%s" % (role, key)))
        if "min_worker" in ports and "max_worker" in ports:
            low, _high = parse_ports(ports["min_worker"], "%s_ports.min_worker" % role)
            _low, high = parse_ports(ports["max_worker"], "%s_ports.max_worker" % role)
            found.append((low, high, "%s_ports.min_worker-max_worker" % role))
    serves_source = follows = False
    for index, model in enumerate(models or []):
        if not isinstance(model, dict):
            continue
        nodes = model_nodes(model, host)
        if model.get("source") is not None and host in nodes:
            serves_source = True
        if host not in nodes or len(nodes) < 2:
            continue
        follows = follows or nodes[0] != host
        if fleet_plan.executor_of(model, executor) != "mp":
            continue
        low, high = parse_ports(model.get("master_port", fleet_plan.DEFAULT_MASTER_PORT), "models[%d].master_port" % index)
        found.append((low, high, "model %s master_port" % model.get("name", index)))
    if serves_source:
        port = role_value(rsync_port, "model_store", "model_store_rsync_port", roles_dir)
        if port is not None:
            low, high = parse_ports(port, "model_store_rsync_port")
            found.append((low, high, "model_store_rsync_port"))
    if follows:
        port = page_cache_port if page_cache_port is not None else fleet_default("page_cache_port")
        low, high = parse_ports(port, "vllm_service_page_cache_port")
        found.append((low, high, "vllm_service_page_cache_port"))
    if boolean(role_value(nccl_build_once, "nccl", "nccl_build_once", roles_dir), strict=False):
        port = role_value(nccl_rsync_port, "nccl", "nccl_rsync_port", roles_dir)
        if port is not None:
            low, high = parse_ports(port, "nccl_rsync_port")
            found.append((low, high, "nccl_rsync_port"))
    for index, value in enumerate(extra or []):
        low, high = parse_ports(value, "fabric_firewall_extra_internal_ports[%d]" % index)
        found.append((low, high, "fabric_firewall_extra_internal_ports[%d]" % index))
    return sorted(set(found))


def api_ports(host, models=None):
    """The API ports this host serves: one per model entry whose first node it is."""
    found = []
    for index, model in enumerate(models or []):
        if not isinstance(model, dict):
            continue
        nodes = model_nodes(model, host)
        if nodes[0] != host:
            continue
        low, high = parse_ports(model.get("port", fleet_plan.DEFAULT_PORT), "models[%d].port" % index)
        found.append((low, high, "model %s port" % model.get("name", index)))
    return sorted(set(found))


def management_networks(addr_info):
    """The networks of an interface (``ip -j addr show dev X``'s addr_info) that are global: the management LAN."""
    nets = []
    for info in addr_info or []:
        if info.get("scope", "global") != "global" or info.get("family") not in ("inet", "inet6"):
            continue
        net = str(netaddr.IPNetwork("%s/%s" % (info["local"], info["prefixlen"])).cidr)
        if net not in nets:
            nets.append(net)
    return nets


def fabric_interfaces(links, pattern):
    """The fabric interfaces of ``ip -j addr`` output: netdevs matching the rule book's QSFP pattern that
    hold an IPv4 address. Returns ``[{'name': ..., 'addresses': ['a.b.c.d/nn', ...]}]``."""
    import re
    out = []
    for link in links or []:
        name = link.get("ifname", "")
        if not re.match(pattern, name):
            continue
        addrs = ["%s/%s" % (a["local"], a["prefixlen"]) for a in link.get("addr_info") or []
                 if a.get("family") in ("inet", "inet6") and a.get("scope", "global") == "global"]
        if any(":" not in a for a in addrs):
            out.append({"name": name, "addresses": addrs})
    return out


def plan(host, fabric, api_sources, internal, api, ephemeral=None):
    """Everything the ruleset needs, checked: ``fabric`` as from fabric_interfaces, ``api_sources`` CIDRs,
    ``internal``/``api`` as from internal_ports/api_ports, ``ephemeral`` (low, high) or None."""
    if not fabric:
        raise FirewallError("no fabric interface with an address: run the network stage first")
    nets = {4: [], 6: []}
    addrs = {4: [], 6: []}
    for iface in fabric:
        for cidr in iface["addresses"]:
            ip = netaddr.IPNetwork(cidr)
            for bucket, value in ((nets, str(ip.cidr)), (addrs, str(ip.ip))):
                if value not in bucket[ip.version]:
                    bucket[ip.version].append(value)
    sources = {4: [], 6: []}
    for index, cidr in enumerate(api_sources or []):
        net = parse_network(cidr, "fabric_firewall_api_sources[%d]" % index)
        if str(net) not in sources[net.version]:
            sources[net.version].append(str(net))
    overlap = [(i, a) for i in internal for a in api if i[0] <= a[1] and a[0] <= i[1]]
    if overlap:
        (ilow, ihigh, iwhy), (alow, ahigh, awhy) = overlap[0]
        raise FirewallError("%s (%s) is also internal: %s (%s); give the API a port outside Ray's ports, "
                            "the worker range and the rendezvous ports" % (
                                awhy, _span(alow, ahigh), iwhy, _span(ilow, ihigh)))
    return {
        "host": host,
        "interfaces": sorted(set(i["name"] for i in fabric)),
        "fabric_nets4": sorted(nets[4]), "fabric_nets6": sorted(nets[6]),
        "fabric_addrs4": sorted(addrs[4]), "fabric_addrs6": sorted(addrs[6]),
        "api_sources4": sorted(sources[4]), "api_sources6": sorted(sources[6]),
        "internal": [list(p) for p in internal],
        "api": [list(p) for p in api],
        "ephemeral": list(ephemeral) if ephemeral else None,
    }


def _span(low, high):
    return str(low) if low == high else "%d-%d" % (low, high)


def _merge(ports):
    """Sorted (low, high, why) with overlaps joined (an interval set refuses overlapping elements)."""
    merged = []
    for low, high, why in sorted(ports):
        if merged and low <= merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], high), last[2] + ", " + why)
        else:
            merged.append((low, high, why))
    return merged


def _set(name, kind, elements, interval=False):
    flags = " flags interval;" if interval else ""
    if not elements:
        return "\tset %s { type %s;%s }" % (name, kind, flags)
    return "\tset %s {\n\t\ttype %s;%s\n\t\telements = {\n\t\t\t%s\n\t\t}\n\t}" % (
        name, kind, flags, ",\n\t\t\t".join(elements))


def _quote(text):
    return '"%s"' % str(text).replace('"', "'")[:120]


def ruleset_body(p):
    """The table's sets and input chain (without the comment that carries the digest)."""
    internal = ["%s comment %s" % (_span(lo, hi), _quote(why)) for lo, hi, why in _merge(p["internal"])]
    api = ["%s comment %s" % (_span(lo, hi), _quote(why)) for lo, hi, why in _merge(p["api"])]
    lines = [
        _set("fabric_ifaces", "ifname", ['"%s"' % n for n in p["interfaces"]]),
        _set("fabric_nets4", "ipv4_addr", p["fabric_nets4"], interval=True),
        _set("fabric_nets6", "ipv6_addr", p["fabric_nets6"], interval=True),
        _set("fabric_addrs4", "ipv4_addr", p["fabric_addrs4"]),
        _set("fabric_addrs6", "ipv6_addr", p["fabric_addrs6"]),
        _set("api_sources4", "ipv4_addr", p["api_sources4"], interval=True),
        _set("api_sources6", "ipv6_addr", p["api_sources6"], interval=True),
        _set("api_ports", "inet_service", api, interval=True),
        _set("internal_ports", "inet_service", internal, interval=True),
        "\tchain input {",
        "\t\ttype filter hook input priority filter; policy accept;",
        '\t\tiif "lo" accept comment "the host itself"',
        '\t\tct state established,related accept comment "replies and connections already admitted"',
        '\t\tiifname @fabric_ifaces ip saddr @fabric_nets4 accept comment "fabric peers: Ray, NCCL, Gloo, rendezvous"',
        '\t\tiifname @fabric_ifaces ip6 saddr @fabric_nets6 accept comment "fabric peers (IPv6)"',
        '\t\tiifname != @fabric_ifaces ip daddr @fabric_addrs4 drop comment "the fabric address only over the fabric"',
        '\t\tiifname != @fabric_ifaces ip6 daddr @fabric_addrs6 drop comment "the fabric address only over the fabric"',
        '\t\ttcp dport @api_ports ip saddr @api_sources4 accept comment "API from fabric_firewall_api_sources"',
        '\t\ttcp dport @api_ports ip6 saddr @api_sources6 accept comment "API from fabric_firewall_api_sources"',
        '\t\ttcp dport @api_ports drop comment "API from anywhere else"',
        '\t\tmeta l4proto { tcp, udp } th dport @internal_ports drop comment "internal ports: fabric only"',
    ]
    if p.get("ephemeral"):
        lines.append('\t\ttcp dport %s drop comment "ephemeral listeners (NCCL, Gloo, ZMQ): fabric only"'
                     % _span(*p["ephemeral"]))
    lines.append("\t}")
    return "\n".join(lines) + "\n"


def digest(p):
    """Short sha256 of the table's content; the live table carries it in its comment."""
    return hashlib.sha256(ruleset_body(p).encode("utf-8")).hexdigest()[:16]


def live_is_stale(live, p):
    """Whether the live table is not the one planned (``p``): ``live`` is the answer of ``nft list table`` (``rc``,
    ``stdout``); absent (rc not 0), loaded by hand, or of an older plan, it carries no comment with ``p``'s digest."""
    return live["rc"] != 0 or ("comment %s" % _quote(COMMENT_PREFIX + p["digest"])) not in live["stdout"]


def ruleset(p):
    """The whole nft file: create-then-delete-then-define, so loading it is one atomic replacement of
    our table and never touches any other table."""
    return "\n".join([
        "table %s %s" % (FAMILY, TABLE),
        "delete table %s %s" % (FAMILY, TABLE),
        "table %s %s {" % (FAMILY, TABLE),
        "\tcomment %s" % _quote(COMMENT_PREFIX + digest(p)),
        ruleset_body(p) + "}",
        "",
    ])
