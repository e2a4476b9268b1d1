# -*- coding: utf-8 -*-
"""unit_settled: a role skips its systemd_service call only when the unit is running and enabled as wanted; every
other answer (a unit not there, starting, failed, disabled, an unreadable read) keeps the call."""

import os

import pytest

from ansible_collections.sparkfleet.gb10.plugins.filter.unit_settled import unit_properties, unit_settled

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "systemd", "show")


def show(text, rc=0):
    return {"rc": rc, "stdout": text}


@pytest.mark.parametrize("stdout,enabled,settled", [
    ("UnitFileState=enabled\nActiveState=active", True, True),
    ("ActiveState=active\nUnitFileState=enabled", None, True),
    ("UnitFileState=disabled\nActiveState=active", True, False),
    ("UnitFileState=disabled\nActiveState=active", False, True),
    ("UnitFileState=enabled\nActiveState=active", False, False),
    ("UnitFileState=enabled\nActiveState=activating", True, False),
    ("UnitFileState=enabled\nActiveState=failed", True, False),
    ("UnitFileState=enabled\nActiveState=inactive", None, False),
    # A unit systemd does not know: show answers rc 0 with an empty file state and inactive.
    ("UnitFileState=\nActiveState=inactive", True, False),
    ("", None, False),
])
def test_settled_only_when_running_as_wanted(stdout, enabled, settled):
    assert unit_settled(show(stdout), enabled=enabled) is settled


def test_a_boot_unit_is_settled_by_its_enablement_alone():
    """The firewall's boot unit is only enabled by the role (it runs at boot, before the network)."""
    assert unit_settled(show("UnitFileState=enabled\nActiveState=inactive"), enabled=True, active=None) is True
    assert unit_settled(show("UnitFileState=disabled\nActiveState=active"), enabled=True, active=None) is False
    assert unit_settled(show("UnitFileState=\nActiveState=inactive"), enabled=True, active=None) is False


def test_a_failed_or_missing_read_is_never_settled():
    assert unit_settled(show("UnitFileState=enabled\nActiveState=active", rc=1), enabled=True) is False
    assert unit_settled(None) is False
    assert unit_settled({}) is False


def _recorded(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return {"rc": 0, "stdout": handle.read().rstrip("\n")}


def test_reads_what_real_systemd_answered():
    """Recorded answers of systemd on the site scenario's hosts (tests/fixtures/systemd/show): properties in
    systemd's order, an empty file state for a unit not installed."""
    assert unit_properties(_recorded("ray-head-running.txt")) == {"ActiveState": "active", "UnitFileState": "enabled"}
    assert unit_settled(_recorded("ray-head-running.txt"), enabled=True) is True
    assert unit_settled(_recorded("firewall-not-yet-installed.txt"), enabled=True, active=None) is False
    assert unit_settled(_recorded("firewall-boot-unit-enabled.txt"), enabled=True, active=None) is True
    assert unit_settled(_recorded("firewall-boot-unit-enabled.txt"), enabled=True) is False


def test_the_read_asks_exactly_what_is_judged():
    """sparkfleet.gb10.unit_show builds the host_read command of every role's unit read."""
    from ansible_collections.sparkfleet.gb10.plugins.filter.unit_show import unit_show

    assert unit_show("sparkfleet-ray-head.service", "unit") == {
        "name": "unit", "argv": ["systemctl", "show", "sparkfleet-ray-head.service",
                                 "--property=UnitFileState,ActiveState"]}
    assert unit_show("sparkfleet-health.timer")["name"] == "sparkfleet-health.timer"
    # Every property the read asks for is in the recorded answer unit_settled judges.
    recorded = unit_properties(_recorded("ray-head-running.txt"))
    assert set(unit_show("x.service")["argv"][-1].split("=", 1)[1].split(",")) == set(recorded)
