# -*- coding: utf-8 -*-
"""The memory guard's arguments (filter earlyoom_args): the thresholds and the choice of victim, in earlyoom's
order, then the extra arguments as given."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.filter.earlyoom_args import FilterModule

EARLYOOM_ARGS = FilterModule().filters()["earlyoom_args"]
SETTINGS = {"term_percent": 4, "kill_percent": 2, "swap_percent": 100, "report_interval": 3600,
            "prefer": "^(VLLM::|vllm$)", "avoid": "^(sshd|systemd)$", "extra_args": []}


def test_the_thresholds_and_the_victims_in_order():
    assert EARLYOOM_ARGS(SETTINGS) == ["-m", "4,2", "-s", "100,100", "-r", "3600",
                                       "--prefer", "^(VLLM::|vllm$)", "--avoid", "^(sshd|systemd)$"]


def test_numbers_as_written_and_extra_arguments_last():
    got = EARLYOOM_ARGS(dict(SETTINGS, term_percent=7.5, kill_percent="3", swap_percent=50, report_interval=0,
                             extra_args=["-g", "--sort-by-rss"]))
    assert got[:6] == ["-m", "7.5,3", "-s", "50,50", "-r", "0"]
    assert got[-2:] == ["-g", "--sort-by-rss"] and len(got) == 12
    assert SETTINGS["extra_args"] == []
