# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter earlyoom_args: the memory guard's arguments (role memory_guard, rule memory_guard)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: earlyoom_args
author: sparkfleet.gb10 developers
short_description: earlyoom's arguments from the memory_guard role's settings
version_added: 0.1.0
description:
  - The arguments of the memory guard (C(earlyoom)), one list - C(-m <term>,<kill>) (SIGTERM, then SIGKILL, below
    these percents of MemTotal available), C(-s <swap>,<swap>) (free swap below which it may act), C(-r <seconds>)
    (memory reports), C(--prefer) and C(--avoid) (the process names it kills first, and never while small), then
    C(memory_guard_extra_args) as given.
  - The role's template writes them into C(EARLYOOM_ARGS), sh-quoted; the rule book holds the thresholds (rule
    C(memory_guard)).
options:
  _input:
    description: The memory_guard role's variables without their prefix (lookup C(sparkfleet.gb10.role_vars)) -
      C(term_percent), C(kill_percent), C(swap_percent), C(report_interval), C(prefer), C(avoid), C(extra_args).
    type: dict
    required: true
"""

EXAMPLES = r"""
_memory_guard_args: "{{ lookup('sparkfleet.gb10.role_vars', 'memory_guard') | sparkfleet.gb10.earlyoom_args }}"
# ['-m', '4,2', '-s', '100,100', '-r', '3600', '--prefer', '^(VLLM::|vllm$|ray::RayWorker)', '--avoid', '^(sshd|...)$']
"""

RETURN = r"""
_value:
  description: The arguments, in order.
  type: list
  elements: str
"""


def earlyoom_args(settings):
    """earlyoom's argv after the program, from the role's ``settings`` (``memory_guard_*`` without the prefix)."""
    return (["-m", "%s,%s" % (settings["term_percent"], settings["kill_percent"]),
             "-s", "%s,%s" % (settings["swap_percent"], settings["swap_percent"]),
             "-r", "%s" % (settings["report_interval"],),
             "--prefer", settings["prefer"], "--avoid", settings["avoid"]]
            + settings["extra_args"])


class FilterModule(object):

    def filters(self):
        return {"earlyoom_args": earlyoom_args}
