# -*- coding: utf-8 -*-
"""fabric_ping_targets and fabric_state_checks (plugins/module_utils/fabric_check.py): the peers' fabric addresses
qsfp_network pings, and the read-only checks sparkfleet.gb10.role_state confirms the role with at every rerun."""

from ansible_collections.sparkfleet.gb10.plugins.filter.fabric_state import (
    FilterModule, fabric_ping_targets, fabric_state_checks)

ONE = [{"name": "enp1s0f1np1", "address": "192.168.100.11/24"},
       {"name": "enP2p1s0f1np1", "address": "192.168.101.11/24"}]
TWO = [{"name": "enp1s0f1np1", "address": "192.168.100.12/24"}]
THREE = [{"name": "enp1s0f1np1", "address": ""}, {"name": "enP2p1s0f1np1", "address": "192.168.101.13/24"}]
HOSTVARS = {"spark-1": {"_qsfp_network_present": ONE}, "spark-2": {"_qsfp_network_present": TWO},
            "spark-3": {"_qsfp_network_present": THREE}, "spark-4": {}}


def test_each_peer_on_each_interface_both_have_in_peer_order():
    targets = fabric_ping_targets(HOSTVARS, ["spark-1", "spark-2", "spark-3", "spark-4", "spark-9"], "spark-1", ONE)
    assert targets == [
        {"peer": "spark-2", "ifname": "enp1s0f1np1", "address": "192.168.100.12"},
        {"peer": "spark-3", "ifname": "enP2p1s0f1np1", "address": "192.168.101.13"},
    ]


def test_an_interface_without_an_address_pings_nothing():
    assert fabric_ping_targets(HOSTVARS, ["spark-1", "spark-3"], "spark-3", THREE) == [
        {"peer": "spark-1", "ifname": "enP2p1s0f1np1", "address": "192.168.101.11"}]
    assert fabric_ping_targets(HOSTVARS, ["spark-2"], "spark-2", TWO) == []


def test_checks_prove_the_mtu_and_each_path_by_exit_code():
    targets = fabric_ping_targets(HOSTVARS, ["spark-1", "spark-2"], "spark-1", ONE)
    checks = fabric_state_checks(targets, ONE, mtu="9000", payload="8972", wait="2")
    assert checks == [
        {"name": "MTU 9000 on enp1s0f1np1", "argv": ["grep", "-qx", "9000", "/sys/class/net/enp1s0f1np1/mtu"]},
        {"name": "MTU 9000 on enP2p1s0f1np1", "argv": ["grep", "-qx", "9000", "/sys/class/net/enP2p1s0f1np1/mtu"]},
        {"name": "jumbo ping enp1s0f1np1 spark-2 192.168.100.12",
         "argv": ["ping", "-M", "do", "-s", "8972", "-c", "1", "-W", "2", "-I", "enp1s0f1np1", "192.168.100.12"]},
    ]
    names = [check["name"] for check in checks]
    assert len(set(names)) == len(names)


def test_no_address_no_checks():
    assert fabric_state_checks([], [{"name": "enp1s0f1np1", "address": ""}], mtu=9000, payload=8972) == []


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {"fabric_ping_targets", "fabric_state_checks", "fabric_confirmed"}


def test_fabric_confirmed_only_when_every_host_confirmed_its_pings_and_then_its_firewall():
    from ansible_collections.sparkfleet.gb10.plugins.filter.fabric_state import fabric_confirmed
    both = {"ansible_facts": {"sparkfleet_confirmed": {"qsfp_network": ["ping spark-2"], "fabric_firewall": []}}}
    assert fabric_confirmed({"a": both, "b": both}, ["a", "b"]) is True
    # A host whose firewall drifted (ran in full after the pings), whose qsfp_network was confirmed without checks
    # (qsfp_network_verify off), with no confirmation at all, or missing from hostvars: the gate runs.
    no_firewall = {"ansible_facts": {"sparkfleet_confirmed": {"qsfp_network": ["ping spark-2"]}}}
    no_checks = {"ansible_facts": {"sparkfleet_confirmed": {"qsfp_network": [], "fabric_firewall": []}}}
    for other in (no_firewall, no_checks, {"ansible_facts": {}}, {}):
        assert fabric_confirmed({"a": both, "b": other}, ["a", "b"]) is False
    assert fabric_confirmed({"a": both}, ["a", "b"]) is False
    assert fabric_confirmed({"a": both}, []) is False
