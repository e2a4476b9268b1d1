# -*- coding: utf-8 -*-
# Copyright: sparkfleet.gb10 developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""NCCL's system configuration (/etc/nccl.conf, rule nccl_conf_ib_disable) as qsfp_network reads and cleans it:
the lines gb10_facts read this run, and the regular expression of a forbidden line in any of its spellings. Pure
Python, used by the filters nccl_conf_lines and nccl_conf_line_regexp; unit tested directly."""

from __future__ import annotations

import re


def lines(gb10_facts, path):
    """The raw lines of ``path`` as gb10_facts read them (its ``nccl_conf``), or None when it read another file or
    none: then the caller reads the file itself."""
    conf = (gb10_facts or {}).get("nccl_conf") or {}
    if (conf.get("path") or "") != path or "lines" not in conf:
        return None
    return conf["lines"]


def line_regexp(line):
    """A regular expression that matches the ``KEY=VALUE`` line ``line`` also written as ``export KEY=VALUE``,
    ``KEY = VALUE`` or ``KEY="VALUE"``, with a comment after it."""
    key, value = line.split("=", 1)[0].strip(), line.split("=", 1)[-1].strip()
    return r'^\s*(export\s+)?%s\s*=\s*"?%s"?\s*(#.*)?$' % (re.escape(key), re.escape(value))
