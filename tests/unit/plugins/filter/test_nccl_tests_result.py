# -*- coding: utf-8 -*-
"""nccl_tests_result against nccl-tests output shapes (tests/fixtures/nccl_tests)."""
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_tests_result import FilterModule, nccl_tests_result
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

SHAPES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl_tests")


def shape(name):
    with open(os.path.join(SHAPES, name)) as handle:
        return handle.read()


def test_registered():
    assert set(FilterModule().filters()) == {"nccl_tests_result"}


def test_roce_run_passes_with_the_rule_book_floor():
    result = nccl_tests_result(shape("roce.txt"), host="spark-1")
    assert result["ok"] is True
    assert result["busbw_gbps"] == pytest.approx(19.5648)
    assert result["floor_gbps"] == rulebook.setting("nccl_bus_bandwidth_floor_gbps") == 15.0
    assert result["transport"] == "roce"
    assert result["wrong"] == []
    assert result["message"].startswith("spark-1: bus bandwidth 19.56 GB/s over roce")


def test_socket_fallback_fails_and_explains_the_trap():
    result = nccl_tests_result(shape("socket.txt"), host="spark-1")
    assert result["ok"] is False
    assert result["transport"] == "socket"
    assert result["busbw_gbps"] == pytest.approx(1.955)
    for word in ("spark-1", "TCP sockets", "NCCL_IB_DISABLE", "/etc/nccl.conf", "NCCL_IB_HCA", "below the floor 15.0"):
        assert word in result["message"]


def test_wrong_results_fail_even_at_roce_speed():
    result = nccl_tests_result(shape("wrong.txt"))
    assert result["ok"] is False
    assert result["wrong"] == [33554432]
    assert "nccl_sm121" in result["message"]
    assert "below the floor" not in result["message"]


def test_a_run_without_a_summary_fails():
    result = nccl_tests_result(shape("incomplete.txt"))
    assert result["ok"] is False
    assert result["busbw_gbps"] is None
    assert "did not complete" in result["message"]


def test_the_floor_decides():
    # Sockets cannot reach the floor, RoCE clears it: raise it above the RoCE run and the same run fails.
    assert nccl_tests_result(shape("roce.txt"), floor_gbps=20.0)["ok"] is False
    assert "below the floor 20.0" in nccl_tests_result(shape("roce.txt"), floor_gbps=20.0)["message"]
    assert rulebook.setting("nccl_bus_bandwidth_socket_gbps") < rulebook.setting("nccl_bus_bandwidth_floor_gbps") \
        < rulebook.setting("nccl_bus_bandwidth_roce_gbps")


def test_without_nccl_debug_the_transport_is_unknown_but_bandwidth_still_decides():
    quiet = "\n".join(line for line in shape("roce.txt").splitlines() if "NCCL INFO" not in line)
    result = nccl_tests_result(quiet)
    assert result["ok"] is True and result["transport"] == "unknown"
    assert "NCCL_DEBUG=INFO" in result["message"]


def test_bad_input():
    with pytest.raises(AnsibleFilterError, match="string"):
        nccl_tests_result(None)
