# -*- coding: utf-8 -*-
"""tools/chaos_memory.py (make chaos FAULTS=memory-pressure): what it reads of earlyoom's journal and arguments, the
simulated Spark's meminfo it writes, and the bounds of its eater."""

import importlib.util
import os
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))

import chaos  # noqa: E402
import chaos_memory as cm  # noqa: E402
from ansible_collections.sparkfleet.gb10.plugins.module_utils import rulebook  # noqa: E402

_spec = importlib.util.spec_from_file_location("probe_for_chaos",
                                               os.path.join(REPO, "roles", "fleet_health", "files",
                                                            "sparkfleet-health-probe.py"))
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)

# earlyoom 1.7 on spark-1 during `make chaos FAULTS=memory-pressure` (journalctl -o short-unix), 2026-11-27.
JOURNAL = """\
1795779010.607367 spark-1 earlyoom[6769]: mem total: 4096 MiB, swap total:    0 MiB
1795779016.674874 spark-1 earlyoom[6769]: mem avail:   155 of  4096 MiB ( 3.79%), swap free:    0 of    0 MiB ( 0.00%)
1795779016.674874 spark-1 earlyoom[6769]: low memory! at or below SIGTERM limits: mem  4.00%, swap 100.00%
1795779016.675412 spark-1 earlyoom[6769]: sending SIGTERM to process 5249 uid 997 "VLLM::Worker_TP": badness 1019, VmRSS 1918 MiB
1795779017.279393 spark-1 earlyoom[6769]: escalating to SIGKILL after 0.6 seconds
1795779017.379546 spark-1 earlyoom[6769]: process exited after 0.7 seconds
"""


def test_the_signals_earlyoom_sent_are_read_with_their_time():
    assert cm.parse_sent(JOURNAL) == [(1795779016.675412, "SIGTERM", 5249, "VLLM::Worker_TP", 1019, 1918)]
    assert cm.parse_sent('sending SIGKILL to process 12 uid 0 "python3": badness -5, VmRSS 1 MiB') == [
        (None, "SIGKILL", 12, "python3", -5, 1)]
    assert cm.parse_sent("sending SIGTERM when mem <=  4.00% and swap <= 100.00%,") == []
    assert [m.group(1) for m in map(cm.AFTER_RE.search, JOURNAL.splitlines()) if m] == [
        "escalating to SIGKILL after 0.6 seconds", "process exited after 0.7 seconds"]


def test_the_running_guards_patterns_spare_sshd():
    argv = ["/usr/bin/earlyoom", "-m", "4,2", "--prefer", rulebook.setting("memory_guard_prefer"),
            "--avoid", rulebook.setting("memory_guard_avoid")]
    prefer, avoid = cm.guard_patterns(argv)
    assert (prefer, avoid) == (rulebook.setting("memory_guard_prefer"), rulebook.setting("memory_guard_avoid"))
    assert cm.never_picks(cm.SSHD_NAMES, prefer, avoid) == []
    # Without an avoid pattern, or with sshd preferred, the fault says so.
    assert cm.never_picks(["sshd"], prefer, None) == ["sshd"]
    assert cm.never_picks(["sshd"], "^ssh", avoid) == ["sshd"]
    assert cm.guard_patterns(["/usr/bin/earlyoom", "-r", "3600"]) == (None, None)


def test_the_view_is_what_earlyoom_parses_and_keeps_its_size():
    full, empty = cm.view_text(cm.SPARK_KIB, cm.AVAILABLE_KIB), cm.view_text(cm.SPARK_KIB, -5)
    assert len(full) == len(empty)  # written in place: never a shorter file with stale bytes after it
    seen = probe.parse_meminfo(full)
    assert seen["MemTotal"] == cm.SPARK_KIB * 1024 and seen["MemAvailable"] == cm.AVAILABLE_KIB * 1024
    assert seen["SwapTotal"] == 0 and seen["SwapFree"] == 0
    assert probe.parse_meminfo(empty)["MemAvailable"] == 0


def test_the_eater_crosses_the_guard_but_stays_under_its_cgroup_limit():
    term = rulebook.setting("memory_guard_term_percent") * cm.SPARK_KIB // 100
    kill = rulebook.setting("memory_guard_kill_percent") * cm.SPARK_KIB // 100
    eaten = cm.EAT_MOST_MIB * 1024
    assert cm.AVAILABLE_KIB - eaten < kill < term < cm.AVAILABLE_KIB  # the guard must act, SIGKILL included
    assert cm.EAT_MOST_MIB + 64 <= cm.EAT_LIMIT_MIB  # the eater's limit leaves room for Python itself
    assert cm.EAT_LIMIT_MIB <= 2048  # bounded: the test machine's memory is never at risk


@pytest.mark.parametrize("script", ["VIEW_SCRIPT", "EATER_SCRIPT"])
def test_the_scripts_sent_to_the_host_compile(script):
    compile(getattr(cm, script), script, "exec")


def test_the_fault_is_known_to_make_chaos():
    assert "memory-pressure" in chaos.FAULTS
    assert "``memory-pressure``" in chaos.__doc__
