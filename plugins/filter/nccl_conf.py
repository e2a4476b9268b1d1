# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters of NCCL's system configuration file: its lines as gb10_facts read them (nccl_conf_lines) and a forbidden
KEY=VALUE line in any spelling (nccl_conf_line_regexp); the logic is plugins/module_utils/nccl_conf.py. Each filter
is documented in its own .yml file beside this one."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.module_utils import nccl_conf


def nccl_conf_lines(gb10_facts, path):
    return nccl_conf.lines(gb10_facts, path)


def nccl_conf_line_regexp(line):
    return nccl_conf.line_regexp(str(line))


class FilterModule(object):

    def filters(self):
        return {"nccl_conf_lines": nccl_conf_lines, "nccl_conf_line_regexp": nccl_conf_line_regexp}
