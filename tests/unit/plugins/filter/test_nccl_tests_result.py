# -*- coding: utf-8 -*-
"""nccl_tests_result against nccl-tests output shapes (tests/fixtures/nccl_tests)."""
import functools
import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_tests_result import FilterModule, nccl_tests_result
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook

from fixture_files import FIXTURES, fixture_text  # tests/unit/fixture_files.py

shape = functools.partial(fixture_text, "nccl_tests")  # the text of tests/fixtures/nccl_tests/<name>


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


# ------------------------------------------------ real recordings (tools/gpu-check.sh on a real GPU host)

def real(name):
    text = fixture_text("nccl_tests", "real", name)
    # Every recording says how it was made.
    assert text.startswith("# recorded by tools/gpu-check.sh: "), name
    return text


def test_every_recording_is_used_here():
    used = {"p2p-two-gpus-sm90.txt", "socket-two-gpus-sm90.txt", "missing-sass-sm121-on-sm90.txt",
            "missing-sass-socket-sm121-on-sm90.txt"}
    assert set(os.listdir(os.path.join(FIXTURES, "nccl_tests", "real"))) == used


def test_p2p_inside_one_host_is_not_judged_as_sockets():
    # NCCL 2.28.9 logs 'Using network Socket' at init although every channel runs via P2P.
    text = real("p2p-two-gpus-sm90.txt")
    assert "Using network Socket" in text and "via NET/" not in text
    result = nccl_tests_result(text, host="gpu-host")
    assert result["transport"] == "p2p"
    assert result["transports"] == ["p2p"]
    assert result["busbw_gbps"] == pytest.approx(59.579)
    assert result["ok"] is True
    assert result["failure"] is None
    assert "TCP sockets" not in result["message"]
    assert "proves nothing about RoCE" in result["message"]


def test_p2p_below_the_floor_still_fails_on_bandwidth_not_sockets():
    result = nccl_tests_result(real("p2p-two-gpus-sm90.txt"), floor_gbps=100.0)
    assert result["ok"] is False
    assert "below the floor 100.0" in result["message"]
    assert "TCP sockets" not in result["message"]


def test_real_socket_transport_is_the_trap():
    result = nccl_tests_result(real("socket-two-gpus-sm90.txt"), host="gpu-host")
    assert result["transport"] == "socket"
    assert result["busbw_gbps"] == pytest.approx(1.02608)
    assert result["ok"] is False
    assert "TCP sockets" in result["message"] and "below the floor" in result["message"]


@pytest.mark.parametrize("name", ["missing-sass-sm121-on-sm90.txt", "missing-sass-socket-sm121-on-sm90.txt"])
def test_missing_sass_names_the_trap_and_the_fix(name):
    text = real(name)
    assert "Avg bus bandwidth" not in text
    result = nccl_tests_result(text, host="gpu-host")
    assert result["ok"] is False
    assert result["failure"] == "missing_sass"
    assert result["busbw_gbps"] is None
    for word in ("gpu-host", "named symbol not found", "no SASS", "nccl_sm121", "sparkfleet.gb10.nccl",
                 "cuobjdump", rulebook.setting("nccl_required_sass")):
        assert word in result["message"], word
    assert "did not complete" not in result["message"]


def test_missing_sass_over_p2p_does_not_blame_sockets():
    result = nccl_tests_result(real("missing-sass-sm121-on-sm90.txt"))
    assert result["transport"] == "p2p"
    assert "TCP sockets" not in result["message"]


def test_another_nccl_failure_quotes_its_first_warning():
    result = nccl_tests_result(shape("incomplete.txt"))
    assert result["failure"] == "nccl_error"
    assert "first NCCL warning: NET/IB : Got completion from peer" in result["message"]


def test_transport_comes_from_channel_lines_not_the_init_line():
    # The reconstructed socket shape with its channel lines removed: the init line alone proves nothing.
    text = "\n".join(line for line in shape("socket.txt").splitlines() if " via NET/" not in line)
    assert "Using network Socket" in text
    assert nccl_tests_result(text)["transport"] == "unknown"
    mixed = shape("roce.txt") + "\nspark-1:1:2 [0] NCCL INFO Channel 07/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
    assert nccl_tests_result(mixed)["transport"] == "socket"
    assert nccl_tests_result(mixed)["transports"] == ["socket", "roce"]
