# -*- coding: utf-8 -*-
"""fabric_problems (plugins/module_utils/fabric_check.py): qsfp_network's verify names every fabric problem of a
host, from the kernel's view of its interfaces (the recorded `ip -j addr show` of the GB10 fixtures) and its
don't-fragment pings, in the sentences molecule/network/verify.yml looks for."""

import json
import os
import re

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.fabric_problems import FilterModule, fabric_problems
from ansible_collections.sparkfleet.gb10.plugins.module_utils import fabric_check

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gb10")
PRESENT = [{"name": "enp1s0f1np1", "address": "192.168.100.10/24"},
           {"name": "enP2p1s0f1np1", "address": "192.168.101.10/24"}]


def ip_addr(fixture):
    with open(os.path.join(FIXTURES, fixture, "bin", "ip-addr.json")) as handle:
        return handle.read()


def with_mtu(text, ifname, mtu):
    data = json.loads(text)
    for row in data:
        if row["ifname"] == ifname:
            row["mtu"] = mtu
    return json.dumps(data)


def ping(peer, ifname, address, rc, stdout="", stderr=""):
    """One entry of fabric_ping's results, as plugins/modules/fabric_ping.py returns it."""
    return {"item": [peer, ifname], "rc": rc,
            "cmd": ["ping", "-M", "do", "-s", "8972", "-c", "3", "-i", "0.2", "-W", "2", "-I", ifname, address],
            "stdout_lines": stdout.splitlines(), "stderr_lines": stderr.splitlines()}


def test_registered():
    assert set(FilterModule().filters()) == {"fabric_problems"}


def test_a_fabric_as_it_should_be_has_no_problem():
    pings = {"results": [ping("spark-2", "enp1s0f1np1", "192.168.100.11", 0)]}
    assert fabric_problems(ip_addr("nominal"), PRESENT, pings, {"spark-2": ip_addr("nominal")}, host="spark-1") == []
    assert fabric_problems(json.loads(ip_addr("nominal")), PRESENT, {"skipped": True}, host="spark-1") == []


def test_the_interfaces_are_read_from_ip_json():
    seen = fabric_check.interfaces(ip_addr("nominal"))
    assert seen["enp1s0f1np1"] == {"mtu": 9000, "inet": [{"local": "192.168.100.10", "prefixlen": 24}]}
    assert seen["enP2p1s0f0np0"] == {"mtu": 9000, "inet": []}
    assert fabric_check.interfaces([{"ifname": "lo", "mtu": 65536}]) == {"lo": {"mtu": 65536, "inet": []}}


def test_an_mtu_below_the_fabric_s_is_named():
    assert fabric_problems(ip_addr("mtu_1500"), PRESENT, host="spark-1") == [
        "spark-1 enp1s0f1np1: MTU 1500, expected 9000", "spark-1 enP2p1s0f1np1: MTU 1500, expected 9000"]
    assert fabric_problems(ip_addr("mtu_1500"), PRESENT[:1], mtu="1500", host="spark-1") == []


def test_an_interface_the_kernel_does_not_show_is_unknown():
    present = [{"name": "enp9s0f1np1", "address": "192.168.100.10/24"}]
    assert fabric_problems(ip_addr("nominal"), present, host="h") == [
        "h enp9s0f1np1: MTU unknown, expected 9000", "h enp9s0f1np1: address 192.168.100.10/24 missing (has none)"]


def test_a_missing_and_a_stray_address_are_named_with_the_fix():
    present = [{"name": "enp1s0f1np1", "address": "192.168.100.20/24"}]
    first, second = fabric_problems(ip_addr("nominal"), present, host="spark-2")
    assert first == "spark-2 enp1s0f1np1: address 192.168.100.20/24 missing (has 192.168.100.10)"
    assert second.startswith("spark-2 enp1s0f1np1: carries 192.168.100.10/24 besides its fabric address "
                             "192.168.100.20/24. Gloo (GLOO_SOCKET_IFNAME) and NCCL's socket bootstrap take")
    assert second.endswith("Remove it (ip addr del 192.168.100.10/24 dev enp1s0f1np1) and what adds it (another "
                           "netplan file, NetworkManager, a DHCP client)")


def test_an_interface_without_an_address_is_judged_by_its_mtu_only():
    present = [{"name": "enp1s0f1np1", "address": ""}, {"name": "enp1s0f0np0"}]
    assert fabric_problems(ip_addr("nominal"), present, host="h") == []


def test_a_failed_ping_names_both_ends_their_mtu_and_why():
    pings = {"results": [
        ping("spark-2", "enp1s0f1np1", "192.168.100.11", 1,
             stdout="PING 192.168.100.11 (192.168.100.11) from 192.168.100.10 enp1s0f1np1: 8972(9000) bytes of data.\n"
                    "\n--- 192.168.100.11 ping statistics ---\n3 packets transmitted, 0 received, 100% packet loss\n"),
        ping("spark-3", "enp1s0f1np1", "192.168.100.12", 0),
        ping("spark-4", "enP2p1s0f1np1", "192.168.101.13", 1, stderr="ping: sendmsg: Message too long\n\n")]}
    peers = {"spark-2": with_mtu(ip_addr("nominal"), "enp1s0f1np1", 1500)}
    assert fabric_problems(ip_addr("nominal"), PRESENT, pings, peers, host="spark-1") == [
        "spark-1 enp1s0f1np1 (192.168.100.10, MTU 9000) -> spark-2 enp1s0f1np1 (192.168.100.11, MTU 1500): 8972-byte "
        "don't-fragment ping failed: 3 packets transmitted, 0 received, 100% packet loss",
        "spark-1 enP2p1s0f1np1 (192.168.101.10, MTU 9000) -> spark-4 enP2p1s0f1np1 (192.168.101.13, MTU unknown): "
        "8972-byte don't-fragment ping failed: ping: sendmsg: Message too long"]


def test_a_ping_with_nothing_to_say_ends_at_failed():
    pings = {"results": [ping("spark-2", "enp1s0f1np1", "192.168.100.11", 1, stdout="PING x\n--- x ping statistics ---\n")]}
    assert fabric_problems(ip_addr("nominal"), PRESENT, pings, {}, payload="8000", host="spark-1") == [
        "spark-1 enp1s0f1np1 (192.168.100.10, MTU 9000) -> spark-2 enp1s0f1np1 (192.168.100.11, MTU unknown): "
        "8000-byte don't-fragment ping failed"]


def test_the_pair_is_named_as_the_network_scenario_expects():
    """molecule/network/verify.yml breaks network-spark-2's MTU and looks for this sentence on both hosts."""
    pings = {"results": [ping("network-spark-2", "enp1s0f1np1", "192.168.100.12", 1)]}
    present = [{"name": "enp1s0f1np1", "address": "192.168.100.11/24"}]
    mine = json.dumps([{"ifname": "enp1s0f1np1", "mtu": 9000,
                        "addr_info": [{"family": "inet", "local": "192.168.100.11", "prefixlen": 24}]}])
    theirs = with_mtu(mine, "enp1s0f1np1", 1500)
    message = "; ".join(fabric_problems(mine, present, pings, {"network-spark-2": theirs}, host="network-spark-1"))
    assert re.search(r"network-spark-1 enp1s0f1np1 \(192\.168\.100\.1[12], MTU 9000\) -> network-spark-2 enp1s0f1np1 "
                     r"\(192\.168\.100\.1[12], MTU 1500\): 8972-byte don.t-fragment ping failed", message)


def test_without_jmespath_the_filter_says_so(monkeypatch):
    monkeypatch.setattr(fabric_check, "jmespath", None)
    with pytest.raises(AnsibleFilterError, match="needs the python jmespath library"):
        fabric_problems(ip_addr("nominal"), PRESENT)


def test_output_that_is_not_json_is_refused():
    with pytest.raises(AnsibleFilterError, match="fabric_problems: "):
        fabric_problems("Device not found", PRESENT)
