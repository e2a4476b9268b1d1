# -*- coding: utf-8 -*-
"""fabric_ping: argv, result shape, order, and that the pings run at the same time."""

import os
import subprocess
import sys

import pytest

from ansible_collections.sparkfleet.gb10.plugins.modules import fabric_ping as m

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))

# A stand-in ping: records its argv, then for address 10.0.0.1 waits (at most 2 s) until the ping of
# 10.0.0.2 has started; run one after another in order, the first could never see the second.
FAKE = """#!/bin/sh
dir=%(dir)s
last=""; for a in "$@"; do last="$a"; done
echo "$@" > "$dir/$last.argv"
touch "$dir/$last.started"
if [ "$last" = 10.0.0.1 ]; then
  i=0; while [ ! -e "$dir/10.0.0.2.started" ]; do i=$((i+1)); [ $i -gt 20 ] && { echo "alone" >&2; exit 3; }; sleep 0.1; done
fi
case "$last" in
  10.0.0.9) echo "ping: local error: message too long, mtu=1500" >&2; echo "PING 10.0.0.9"; exit 1 ;;
esac
echo "PING $last"; echo "3 packets transmitted, 3 received, 0%% packet loss"
"""

TARGETS = [{"peer": "spark-2", "ifname": "enp1s0f1np1", "address": "10.0.0.1"},
           {"peer": "spark-3", "ifname": "enp1s0f1np1", "address": "10.0.0.2"},
           {"peer": "spark-4", "ifname": "enP2p1s0f1np1", "address": "10.0.0.9"}]


@pytest.fixture
def fake_ping(tmp_path):
    path = tmp_path / "ping"
    path.write_text(FAKE % {"dir": str(tmp_path)})
    path.chmod(0o755)
    return str(path)


def test_argv_is_a_dont_fragment_ping_of_the_payload_from_the_interface():
    assert m.argv_of("ping", TARGETS[0], 8972, 3, 0.2, 2) == [
        "ping", "-M", "do", "-s", "8972", "-c", "3", "-i", "0.2", "-W", "2", "-I", "enp1s0f1np1", "10.0.0.1"]


def test_pings_overlap_and_results_keep_the_targets_order(fake_ping, tmp_path):
    results = m.ping_all(TARGETS, 8972, ping=fake_ping)
    # 10.0.0.1 passes only if 10.0.0.2's ping started while it was still running
    assert [r["rc"] for r in results] == [0, 0, 1]
    assert [r["item"] for r in results] == [["spark-2", "enp1s0f1np1"], ["spark-3", "enp1s0f1np1"],
                                            ["spark-4", "enP2p1s0f1np1"]]
    assert [r["cmd"][-1] for r in results] == ["10.0.0.1", "10.0.0.2", "10.0.0.9"]
    assert results[2]["stderr_lines"] == ["ping: local error: message too long, mtu=1500"]
    assert results[0]["stdout_lines"][-1].startswith("3 packets transmitted, 3 received")
    assert (tmp_path / "10.0.0.9.argv").read_text().split()[:8] == ["-M", "do", "-s", "8972", "-c", "3", "-i", "0.2"]


def test_sequential_pings_would_fail_the_overlap_check(fake_ping):
    # The stand-in itself: alone, the first target's ping gives up, so the test above can fail.
    results = [m.ping_all([target], 8972, ping=fake_ping)[0] for target in TARGETS[:1]]
    assert results[0]["rc"] == 3 and results[0]["stderr_lines"] == ["alone"]


def test_a_missing_ping_is_a_result_not_a_crash(tmp_path):
    results = m.ping_all(TARGETS[:1], 8972, ping=str(tmp_path / "no-ping"))
    assert results[0]["rc"] == 127 and results[0]["stderr_lines"]


def test_module_refuses_an_interval_below_what_ping_allows(fake_ping):
    args = {"ANSIBLE_MODULE_ARGS": {"targets": TARGETS[:1], "payload": 8972, "interval": 0.05, "ping": fake_ping}}
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.sparkfleet.gb10.plugins.modules.fabric_ping"],
                          input=__import__("json").dumps(args), capture_output=True, text=True,
                          cwd=os.path.join(REPO, "collections"), check=False)
    assert '"failed": true' in proc.stdout and "interval at least 0.2" in proc.stdout
