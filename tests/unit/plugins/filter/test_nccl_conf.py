# -*- coding: utf-8 -*-
"""NCCL's system configuration as qsfp_network reads and cleans it (plugins/module_utils/nccl_conf.py, filters
nccl_conf_lines and nccl_conf_line_regexp): the lines gb10_facts read when it read the same file, and a forbidden
line in every spelling NCCL reads as the same setting, with nothing else matched."""

import os
import re

import pytest

from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_conf import FilterModule
from ansible_collections.sparkfleet.gb10.plugins.filter.nccl_conf import nccl_conf_line_regexp, nccl_conf_lines
from ansible_collections.sparkfleet.gb10.plugins.modules.gb10_facts import parse_nccl_conf

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "gb10", "nccl_ib_disabled", "etc",
                       "nccl.conf")


def facts(path="/etc/nccl.conf"):
    """ansible_facts.gb10 with the nccl_conf gb10_facts gathers from the DGX OS fixture."""
    with open(FIXTURE) as handle:
        text = handle.read()
    settings, lines = parse_nccl_conf(text)
    return {"nccl_conf": {"path": path, "exists": True, "settings": settings, "lines": lines}}


def test_registered():
    assert set(FilterModule().filters()) == {"nccl_conf_lines", "nccl_conf_line_regexp"}


def test_the_lines_come_from_the_facts_of_the_same_file():
    lines = nccl_conf_lines(facts(), "/etc/nccl.conf")
    assert "NCCL_IB_DISABLE=1" in lines
    assert lines == facts()["nccl_conf"]["lines"]


@pytest.mark.parametrize("gb10", [
    facts("/srv/other/nccl.conf"),
    {"nccl_conf": {"path": "/etc/nccl.conf", "exists": True}},
    {"cpu_count": 20},
    {},
    None,
], ids=["another_file", "no_lines", "no_nccl_conf", "no_facts", "none"])
def test_without_those_facts_the_role_reads_the_file(gb10):
    assert nccl_conf_lines(gb10, "/etc/nccl.conf") is None


@pytest.mark.parametrize("line", [
    "NCCL_IB_DISABLE=1",
    "export NCCL_IB_DISABLE=1",
    "  export   NCCL_IB_DISABLE = 1  ",
    'NCCL_IB_DISABLE="1"',
    "NCCL_IB_DISABLE=1 # DGX OS default",
    "NCCL_IB_DISABLE=1#no space",
])
def test_every_spelling_of_the_forbidden_line_matches(line):
    assert re.match(nccl_conf_line_regexp("NCCL_IB_DISABLE=1"), line)


@pytest.mark.parametrize("line", [
    "NCCL_IB_DISABLE=0",
    "NCCL_IB_DISABLE=10",
    "# NCCL_IB_DISABLE=1",
    "MY_NCCL_IB_DISABLE=1",
    "NCCL_IB_DISABLED=1",
    "NCCL_IB_DISABLE=1 trailing",
])
def test_nothing_else_matches(line):
    assert not re.match(nccl_conf_line_regexp("NCCL_IB_DISABLE=1"), line)


def test_the_key_and_the_value_are_escaped():
    pattern = nccl_conf_line_regexp(" NCCL_NET = IB.v2 ")
    assert pattern == r'^\s*(export\s+)?NCCL_NET\s*=\s*"?IB\.v2"?\s*(#.*)?$'
    assert not re.match(pattern, "NCCL_NET=IBxv2")
    assert nccl_conf_line_regexp("NCCL_DEBUG") == r'^\s*(export\s+)?NCCL_DEBUG\s*=\s*"?NCCL_DEBUG"?\s*(#.*)?$'


def test_the_same_expression_the_role_wrote_in_jinja():
    """What roles/qsfp_network/vars/main.yml rendered before the filter, for the rule book's line."""
    assert nccl_conf_line_regexp("NCCL_IB_DISABLE=1") == r'^\s*(export\s+)?NCCL_IB_DISABLE\s*=\s*"?1"?\s*(#.*)?$'
