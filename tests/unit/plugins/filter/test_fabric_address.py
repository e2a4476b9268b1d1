# -*- coding: utf-8 -*-
import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.fabric_address import (
    FilterModule, fabric_address, fabric_addresses_check)


def test_registered():
    assert FilterModule().filters() == {"fabric_address": fabric_address,
                                        "fabric_addresses_check": fabric_addresses_check}


@pytest.mark.parametrize("subnet,index,kw,expected", [
    ("192.168.100.0/24", 10, {}, "192.168.100.10"),         # 004's head
    ("192.168.100.0/24", 1, {"start": 10}, "192.168.100.11"),  # 004's worker
    ("192.168.100.0/24", 0, {"start": 10, "prefix": True}, "192.168.100.10/24"),
    ("10.0.0.0/30", 2, {}, "10.0.0.2"),
])
def test_fabric_address(subnet, index, kw, expected):
    assert fabric_address(subnet, index, **kw) == expected


@pytest.mark.parametrize("subnet,index,kw,word", [
    ("192.168.100.0/24", 0, {}, "network address"),
    ("192.168.100.0/24", 255, {}, "broadcast"),
    ("192.168.100.0/24", 300, {}, "outside"),
    ("192.168.100.0/24", -1, {}, "index"),
    ("192.168.100.0/24", True, {}, "index"),
    ("192.168.100.10/24", 1, {}, "host bits"),
    ("not-a-net", 1, {}, "CIDR"),
    ("fd00::/64", 1, {}, "IPv4"),
])
def test_fabric_address_errors(subnet, index, kw, word):
    with pytest.raises(AnsibleFilterError, match=word):
        fabric_address(subnet, index, **kw)


def test_check_accepts_a_good_plan():
    plan = {"spark-1": "192.168.100.10", "spark-2": "192.168.100.11/24"}
    assert fabric_addresses_check(plan, "192.168.100.0/24") is plan
    assert fabric_addresses_check(["192.168.100.10"], "192.168.100.0/24") == ["192.168.100.10"]


def test_check_names_every_bad_host():
    plan = {"spark-1": "192.168.100.10", "spark-2": "192.168.100.10", "spark-3": "192.168.1.11",
            "spark-4": "192.168.100.0", "spark-5": "192.168.100.255", "spark-6": "bogus"}
    with pytest.raises(AnsibleFilterError) as err:
        fabric_addresses_check(plan, "192.168.100.0/24")
    msg = str(err.value)
    for word in ("spark-2: 192.168.100.10 is also used by host spark-1", "spark-3: 192.168.1.11 is outside",
                 "spark-4: 192.168.100.0 is the network", "spark-5: 192.168.100.255 is the broadcast",
                 "spark-6: 'bogus' is not an IPv4"):
        assert word in msg


def test_check_bad_input():
    with pytest.raises(AnsibleFilterError, match="expected"):
        fabric_addresses_check("192.168.100.10", "192.168.100.0/24")
