# -*- coding: utf-8 -*-
"""The fleet plan a roll's batch size is read from (filter roll_plan, playbooks/vars/roll.yml): the first host's
that holds one, as preflight stored it on the hosts it ran on."""

from __future__ import annotations

from ansible_collections.sparkfleet.gb10.plugins.filter.roll_plan import FilterModule

ROLL_PLAN = FilterModule().filters()["roll_plan"]
PLAN_B = {"format": 5, "hosts": {"b": {}}}
PLAN_C = {"format": 5, "hosts": {"c": {}}}


def test_the_first_host_holding_a_plan_gives_it():
    hostvars = {"a": {"ansible_facts": {}}, "b": {"ansible_facts": {"sparkfleet_plan": PLAN_B}},
                "c": {"ansible_facts": {"sparkfleet_plan": PLAN_C}}}
    assert ROLL_PLAN(["a", "b", "c"], hostvars) == PLAN_B
    assert ROLL_PLAN(["c", "b"], hostvars) == PLAN_C


def test_no_plan_anywhere_or_an_empty_one_gives_none():
    assert ROLL_PLAN(["a", "b"], {"a": {}, "b": {"ansible_facts": {"gb10": {}}}}) == {}
    assert ROLL_PLAN([], {}) == {}
    # the first stored plan is the one read, empty or not
    assert ROLL_PLAN(["a", "b"], {"a": {"ansible_facts": {"sparkfleet_plan": None}},
                                  "b": {"ansible_facts": {"sparkfleet_plan": PLAN_B}}}) == {}
