# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The NCCL, Gloo, UCX and Ray environment of a host, from its GB10 facts and its fabric settings: the RoCE
devices of the cabled port (both halves of a QSFP port), the GID index, the rule book's NCCL settings.
Pure Python: the filters in plugins/filter/nccl_env.py and the preflight action call it."""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook


class NcclEnvError(ValueError):
    """An input that cannot be used; the message names the host, the key and the fix (the filter raises it as
    AnsibleFilterError)."""


FABRIC_KEYS = ("interface", "address", "overrides", "allow_socket_fallback")
PORT_SUFFIX = re.compile(r"(s0f\d+np\d+)$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def nccl_int(value):
    """An NCCL_* integer as NCCL reads it (src/misc/param.cc: strtoll(value, NULL, 0)): leading spaces and a sign,
    then hex after 0x, octal after 0, else decimal, up to the first other character; nothing numeric reads 0. So
    'true', 'yes' and 'on' read 0 (the feature stays as it was) and '2' or '0x1' read as set."""
    text = str(value).lstrip()
    sign = -1 if text[:1] == "-" else 1
    text = text[1:] if text[:1] in "+-" else text
    base, digits = 10, "0123456789"
    if text[:2].lower() == "0x" and text[2:3].lower() in "0123456789abcdef" and text[2:3]:
        base, digits, text = 16, "0123456789abcdef", text[2:]
    elif text[:1] == "0":
        base, digits = 8, "01234567"
    number = ""
    for char in text.lower():
        if char not in digits:
            break
        number += char
    return sign * int(number, base) if number else 0


def _fail(host, msg):
    raise NcclEnvError("host %s: %s" % (host, msg))


def port_halves(interface, netdevs):
    """Netdevs of the same QSFP port as ``interface`` (same s0fNnpN suffix), itself first."""
    match = PORT_SUFFIX.search(interface)
    halves = [interface]
    if match:
        halves += sorted(n for n in netdevs if n != interface and n.endswith(match.group(1)))
    return halves


def second_half(interface):
    """The other half of ``interface``'s QSFP port: the netdev of the other PCIe link (rule qsfp_both_halves,
    qsfp_link_prefixes) with the same s0fNnpN suffix, e.g. enP2p1s0f0np0 for enp1s0f0np0; the port 1 half of
    the other link for a name without that suffix."""
    first, other = rulebook.setting("qsfp_link_prefixes")
    match = PORT_SUFFIX.search(str(interface))
    suffix = match.group(1) if match else "s0f1np1"
    return (first if str(interface).startswith(other) else other) + suffix


def v2_ipv4_gids(port):
    wanted = rulebook.setting("nccl_gid_type")
    return dict((g["index"], g["ipv4"]) for g in port.get("gids") or [] if g.get("type") == wanted and g.get("ipv4"))


def choose_roce(gb10, interface, address, warnings):
    """(devices, gid_index, reason) for the fabric port; devices empty when none is usable."""
    roce = gb10.get("roce") or {}
    netdevs = gb10.get("netdevs") or {}
    halves = port_halves(interface, set(netdevs) | set(v.get("netdev") for v in roce.values() if v.get("netdev")))
    by_netdev = dict((v.get("netdev"), dev) for dev, v in roce.items())
    if not roce:
        return [], None, "no RoCE device found (gb10.roce is empty)"
    candidates = []
    for netdev in halves:
        dev = by_netdev.get(netdev)
        if dev is None:
            warnings.append("%s has no RoCE device; that half of the port is not used" % netdev)
            continue
        ports = roce[dev].get("ports") or {}
        active = [p for p in sorted(ports) if ports[p].get("active")]
        if not active:
            warnings.append("RoCE device %s (%s) is not ACTIVE: half of the port's bandwidth is lost; check the cable "
                            "and 'ip link set %s up'" % (dev, netdev, netdev))
            continue
        candidates.append((dev, netdev, v2_ipv4_gids(ports[active[0]])))
    if not candidates:
        return [], None, "no ACTIVE RoCE device on the port of %s (halves: %s)" % (interface, ", ".join(halves))

    index = None
    for _dev, _netdev, gids in candidates:  # the entry carrying the fabric address wins
        hits = sorted(i for i, ip in gids.items() if ip == address)
        if hits:
            index = hits[0]
            break
    if index is None:
        for _dev, _netdev, gids in candidates:
            if gids:
                index = min(gids)
                break
    if index is None:
        return [], None, ("no RoCE v2 GID with an IPv4 address on %s; give %s its fabric address so the GID table "
                          "gets one" % (", ".join(c[0] for c in candidates), interface))
    devices = []
    for dev, netdev, gids in candidates:
        if index in gids:
            devices.append(dev)
        else:
            warnings.append("RoCE device %s (%s) has no RoCE v2 IPv4 GID at index %d; left out of NCCL_IB_HCA (give "
                            "%s an IPv4 address)" % (dev, netdev, index, netdev))
    return devices, index, None


def nccl_env(gb10_facts, fabric, host=None):
    host = host or "this host"
    if not isinstance(gb10_facts, dict):
        _fail(host, "nccl_env input must be ansible_facts.gb10 (a dict), got %s; run sparkfleet.gb10.gb10_facts first"
              % type(gb10_facts).__name__)
    if not isinstance(fabric, dict):
        _fail(host, "fabric must be a dict with interface and address, got %r" % (fabric,))
    for key in fabric:
        if key not in FABRIC_KEYS:
            _fail(host, "unknown fabric key '%s'; known keys: %s" % (key, ", ".join(FABRIC_KEYS)))
    interface = fabric.get("interface")
    address = fabric.get("address")
    overrides = fabric.get("overrides") or {}
    allow_socket = fabric.get("allow_socket_fallback", False)
    if not interface or not isinstance(interface, str):
        _fail(host, "fabric key 'interface' is required: the cabled QSFP netdev, e.g. enp1s0f1np1")
    try:
        ipaddress.IPv4Address(str(address))
    except ValueError:
        _fail(host, "fabric key 'address' must be this host's fabric IPv4 address, got %r" % (address,))
    if not isinstance(overrides, dict) or not all(isinstance(k, str) and ENV_NAME.match(k) for k in overrides):
        _fail(host, "fabric key 'overrides' must map environment variable names to values, got %r" % (overrides,))
    if not isinstance(allow_socket, bool):
        _fail(host, "fabric key 'allow_socket_fallback' must be true or false, got %r" % (allow_socket,))

    netdevs = gb10_facts.get("netdevs") or {}
    warnings = []
    if netdevs and interface not in netdevs:
        _fail(host, "fabric interface %s is not a QSFP netdev of this host (found: %s); fix fabric.interface"
              % (interface, ", ".join(sorted(netdevs)) or "none"))
    nd = netdevs.get(interface) or {}
    if nd.get("mtu") is not None and nd["mtu"] != rulebook.setting("fabric_mtu"):
        warnings.append("%s has MTU %s, not %s (rule fabric_mtu): transfers fragment" % (
            interface, nd["mtu"], rulebook.setting("fabric_mtu")))
    if nd.get("ipv4") is not None and address not in [a.split("/")[0] for a in nd["ipv4"]]:
        warnings.append("%s does not carry %s yet (has %s)" % (interface, address, ", ".join(nd["ipv4"]) or "nothing"))
    conf = (gb10_facts.get("nccl_conf") or {}).get("settings") or {}
    for line in rulebook.setting("nccl_conf_forbidden"):
        key, value = line.split("=", 1)
        if conf.get(key) == value:
            warnings.append("%s has %s (rule nccl_conf_ib_disable); the environment overrides it but remove it"
                            % ((gb10_facts.get("nccl_conf") or {}).get("path") or "/etc/nccl.conf", line))

    devices, gid_index, reason = choose_roce(gb10_facts, interface, address, warnings)
    transport = "roce"
    if not devices:
        if not allow_socket:
            _fail(host, "%s. NCCL would fall back to TCP sockets (~%s GB/s instead of ~%s GB/s over RoCE). Fix the "
                        "RoCE link, or set fabric.allow_socket_fallback: true to accept it"
                  % (reason, rulebook.setting("nccl_bus_bandwidth_socket_gbps"),
                     rulebook.setting("nccl_bus_bandwidth_roce_gbps")))
        transport = "socket"
        warnings.insert(0, "SOCKET FALLBACK: %s; NCCL runs over TCP at ~%s GB/s instead of ~%s GB/s and the "
                           "bandwidth check (floor %s GB/s) will fail" % (
                               reason, rulebook.setting("nccl_bus_bandwidth_socket_gbps"),
                               rulebook.setting("nccl_bus_bandwidth_roce_gbps"),
                               rulebook.setting("nccl_bus_bandwidth_floor_gbps")))

    env = {}
    for name in rulebook.setting("fabric_ifname_env_vars"):
        env[name] = interface
    if transport == "roce":
        env["NCCL_IB_HCA"] = ",".join(devices)
        env["NCCL_IB_GID_INDEX"] = str(gid_index)
        env["NCCL_IB_DISABLE"] = rulebook.setting("nccl_ib_disable")
        env["NCCL_IB_ROCE_VERSION_NUM"] = rulebook.setting("nccl_ib_roce_version_num")
        env["NCCL_IB_TIMEOUT"] = rulebook.setting("nccl_ib_timeout")
    else:
        env["NCCL_IB_DISABLE"] = "1"
    env["NCCL_NET_PLUGIN"] = rulebook.setting("nccl_net_plugin")
    env["NCCL_NET_GDR_LEVEL"] = rulebook.setting("nccl_net_gdr_level")
    env["NCCL_P2P_DISABLE"] = rulebook.setting("nccl_p2p_disable")
    env["VLLM_HOST_IP"] = str(address)
    env["RAY_memory_monitor_refresh_ms"] = str(rulebook.setting("ray_memory_monitor_refresh_ms"))
    env["RAY_memory_usage_threshold"] = str(rulebook.setting("ray_memory_usage_threshold"))
    env.update(rulebook.kernel_env())

    overridden = []
    for name in sorted(overrides):
        value = "" if overrides[name] is None else str(overrides[name])
        if env.get(name) != value:
            overridden.append({"name": name, "computed": env.get(name), "value": value})
        env[name] = value
    if transport == "roce" and nccl_int(env.get("NCCL_IB_DISABLE", "0")) != 0:
        transport = "socket"
        warnings.insert(0, "SOCKET FALLBACK: NCCL_IB_DISABLE=%s comes from overrides; NCCL runs over TCP (~%s GB/s)"
                        % (env["NCCL_IB_DISABLE"], rulebook.setting("nccl_bus_bandwidth_socket_gbps")))

    return {
        "env": env,
        "transport": transport,
        "ib_hca": devices,
        "gid_index": gid_index,
        "ray_node_ip": str(address),
        "overridden": overridden,
        "warnings": warnings,
    }


def nccl_env_vars(gb10_facts, fabric, host=None):
    return nccl_env(gb10_facts, fabric, host=host)["env"]
