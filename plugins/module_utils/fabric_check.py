# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The proof that a host's fabric carries jumbo frames, as qsfp_network's tasks/verify.yml judges it: the MTU and
the IPv4 addresses the kernel shows on each fabric interface (``ip -j addr show``), and the don't-fragment pings
to every peer (module fabric_ping). Each problem is one sentence that names the host, the interface and, for a
ping, both ends with the MTU each side shows. Used by the filter sparkfleet.gb10.fabric_problems; unit tested
directly."""

from __future__ import annotations

import json
import re

try:
    import jmespath
except ImportError:  # reported by the filter
    jmespath = None

# One row per netdev of `ip -j addr show`: its name, MTU and IPv4 addresses.
INTERFACES = "[].{ifname: ifname, mtu: mtu, inet: addr_info[?family=='inet'].{local: local, prefixlen: prefixlen}}"
# The pings that did not all come back (a skipped ping task has no results).
FAILED_PINGS = "results[?rc != null && rc != `0`]"
# ping's own lines that say nothing about why it failed: the header, the statistics' separator, blank lines.
NOISE = re.compile(r"^(PING|---|\s*$)")
UNKNOWN = "unknown"


def interfaces(ip_addr):
    """``{ifname: {"mtu": int, "inet": [{"local", "prefixlen"}]}}`` from ``ip -j addr show`` (its text or parsed)."""
    data = json.loads(ip_addr) if isinstance(ip_addr, str) else ip_addr
    return dict((row["ifname"], {"mtu": row["mtu"], "inet": row["inet"] or []})
                for row in jmespath.search(INTERFACES, data or []) or [])


def _bare(address):
    return str(address or "").split("/", 1)[0]


def local_problems(host, present, seen, mtu):
    """The problems of each fabric interface of ``present`` (``[{name, address}]``; address with its prefix, or
    empty) as ``seen`` (:func:`interfaces`) shows it: another MTU, the fabric address missing, another address
    beside it."""
    problems = []
    for iface in present:
        name, address = iface["name"], iface.get("address") or ""
        shown = seen.get(name, {"mtu": UNKNOWN, "inet": []})
        ipv4 = [a["local"] for a in shown["inet"]]
        if shown["mtu"] != mtu:
            problems.append("%s %s: MTU %s, expected %s" % (host, name, shown["mtu"], mtu))
        if address and _bare(address) not in ipv4:
            problems.append("%s %s: address %s missing (has %s)" % (host, name, address, ", ".join(ipv4) or "none"))
        extra = ["%s/%s" % (a["local"], a["prefixlen"]) for a in shown["inet"] if a["local"] != _bare(address)]
        if address and extra:
            problems.append(
                "%s %s: carries %s besides its fabric address %s. Gloo (GLOO_SOCKET_IFNAME) and NCCL's socket bootstrap"
                " take an address of the interface, not the fabric address, so ranks can dial one their peers do not"
                " route. Remove it (ip addr del %s dev %s) and what adds it (another netplan file, NetworkManager, a"
                " DHCP client)" % (host, name, ", ".join(extra), address, extra[0], name))
    return problems


def ping_problems(host, present, seen, pings, peers_seen, payload):
    """One problem per failed ping of ``pings`` (fabric_ping's result): both ends, each with the MTU its own host
    shows (``peers_seen``: ``{peer: interfaces}``), and ping's last word on it."""
    addresses = dict((iface["name"], _bare(iface.get("address"))) for iface in present)
    problems = []
    for result in jmespath.search(FAILED_PINGS, pings or {}) or []:
        peer, ifname = result["item"][0], result["item"][1]
        # A regular expression over the lines: not something jmespath selects with.
        why = [line for line in (result.get("stderr_lines") or []) + (result.get("stdout_lines") or [])
               if line and not NOISE.match(line)]
        problems.append("%s %s (%s, MTU %s) -> %s %s (%s, MTU %s): %s-byte don't-fragment ping failed%s" % (
            host, ifname, addresses.get(ifname, ""), seen.get(ifname, {}).get("mtu", UNKNOWN),
            peer, ifname, result["cmd"][-1], peers_seen.get(peer, {}).get(ifname, {}).get("mtu", UNKNOWN),
            payload, ": " + why[-1] if why else ""))
    return problems


def problems(ip_addr, present, pings=None, peers=None, mtu=9000, payload=8972, host=""):
    """Every fabric problem of one host: those of its interfaces, then those of its pings.

    ``ip_addr``: the host's ``ip -j addr show``; ``present``: its fabric interfaces (``[{name, address}]``);
    ``pings``: fabric_ping's result (or a skipped task's); ``peers``: ``{peer: its ip -j addr show}``."""
    seen = interfaces(ip_addr)
    peers_seen = dict((peer, interfaces(out)) for peer, out in (peers or {}).items())
    return (local_problems(host, present or [], seen, int(mtu))
            + ping_problems(host, present or [], seen, pings, peers_seen, int(payload)))


def ping_targets(host, peers, present, peers_present):
    """What ``host`` pings to prove its fabric: for each peer of ``peers`` but itself and each of its interfaces
    that has an address (``present``: ``[{name, address}]``), the peer's address on the same interface
    (``peers_present``: ``{peer: its present}``), as ``[{peer, ifname, address}]`` (address without its prefix).
    A peer without an address there (not in this run, or without that interface) is left out."""
    targets = []
    mine = [iface["name"] for iface in present or [] if iface.get("address")]
    for peer in peers or []:
        if peer == host:
            continue
        theirs = dict((iface["name"], _bare(iface.get("address"))) for iface in (peers_present or {}).get(peer) or [])
        for ifname in mine:
            if theirs.get(ifname):
                targets.append({"peer": peer, "ifname": ifname, "address": theirs[ifname]})
    return targets


def state_checks(targets, present, mtu, payload, wait=2):
    """The read-only commands sparkfleet.gb10.role_state runs at every confirmation of qsfp_network, each proving by
    its exit code alone: the MTU of each fabric interface with an address (``grep -qx MTU`` of its sysfs entry),
    then one don't-fragment ping of ``payload`` bytes (verify's size and flags) to each target (:func:`ping_targets`)
    from the interface that carries it, which passes only if both ends and the path take the full frame."""
    checks = [{"name": "MTU %s on %s" % (mtu, iface["name"]),
               "argv": ["grep", "-qx", str(mtu), "/sys/class/net/%s/mtu" % iface["name"]]}
              for iface in present or [] if iface.get("address")]
    checks.extend({"name": "jumbo ping %s %s %s" % (t["ifname"], t["peer"], t["address"]),
                   "argv": ["ping", "-M", "do", "-s", str(payload), "-c", "1", "-W", str(wait), "-I", t["ifname"],
                            t["address"]]}
                  for t in targets or [])
    return checks


def confirmed_everywhere(confirmations):
    """Whether this run already proved what fleet_verify's jumbo-frame gate would: every host's qsfp_network confirmed
    converged with its checks (the same don't-fragment pings to each peer and the MTU of each fabric interface) and
    every host's fabric_firewall confirmed after it, so no firewall changed since the pings. ``confirmations``: each
    host's fact ``sparkfleet_confirmed`` ({role: [check names]}), None where the host has none."""
    return bool(confirmations) and all(
        bool((each or {}).get("qsfp_network")) and "fabric_firewall" in (each or {}) for each in confirmations)
