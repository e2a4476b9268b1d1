# -*- coding: utf-8 -*-
"""fwupdmgr's answers read against real recordings (tests/fixtures/fwupd, README there): what a firmware
update offers, nothing to do, and failures in fwupd's own words."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.sparkfleet.gb10.plugins.module_utils import dpkg, fwupd

from fixture_files import FIXTURES, recorded_command  # tests/unit/fixture_files.py


def recorded(name):
    return recorded_command("fwupd", name)


def test_the_recordings_were_made_with_the_commands_the_collection_runs():
    assert recorded("refresh-offline")[0]["argv"] == fwupd.refresh_argv()
    assert recorded("get-updates-offer")[0]["argv"] == fwupd.get_updates_argv()
    device = "08d460be0f1f9f128413f816022a6439e0078018"
    assert recorded("update")[0]["argv"] == fwupd.update_argv(device)


def test_an_offer_names_the_device_its_version_and_the_release_update_installs():
    offer = fwupd.parse_updates(*recorded("get-updates-offer")[1])
    assert [fwupd.describe(u) for u in offer] == ["Integrated Webcam\u2122 1.2.2 -> 1.2.4"]
    assert offer[0]["releases"] == ["1.2.4", "1.2.3"] and offer[0]["remote"] == "fwupd-tests"
    # the device the offer names is the one the update then installed
    history = json.loads(recorded("get-history")[1][1])["Devices"]
    assert [(d["DeviceId"], d["Releases"][0]["Version"]) for d in history] == [(offer[0]["device_id"], "1.2.4")]


@pytest.mark.parametrize("name", ["get-updates-none", "get-updates-nodevice", "get-updates-none-text",
                                  "get-updates-nodevice-text"])
def test_nothing_to_do_is_an_empty_offer(name):
    assert fwupd.parse_updates(*recorded(name)[1]) == []


def test_a_failure_says_what_fwupd_said():
    with pytest.raises(fwupd.FwupdError, match=r"exited 101: Failed to download metadata for lvfs"):
        fwupd.check_refresh(*recorded("refresh-offline")[1])
    assert fwupd.check_refresh(*recorded("refresh")[1]) is None
    # text where JSON was asked for is not an offer
    with pytest.raises(fwupd.FwupdError, match="exited 1: boom"):
        fwupd.parse_updates(1, "", "Idle\u2026: 0%\nboom\n")


def test_dpkg_reads_packages_as_gb10_facts_does():
    """One reading of dpkg-query for os_update_plan and gb10_facts: gb10_facts asks with dpkg's command line."""
    from ansible_collections.sparkfleet.gb10.plugins.modules import gb10_facts
    with open(os.path.join(FIXTURES, "dpkg", "dpkg-query.txt")) as handle:
        text = handle.read()
    asked = []

    def run(argv):
        asked.append(argv)
        return 0, text, ""

    assert gb10_facts.gather_packages("dpkg-query", run, []) == dpkg.parse_dpkg_query(text)
    assert asked == [dpkg.query_argv("dpkg-query")]


def test_the_verify_recordings_were_made_with_the_commands_the_role_runs():
    for name in ("get-devices-updated", "get-devices-restarted"):
        assert recorded(name)[0]["argv"] == fwupd.get_devices_argv()
    assert recorded("get-history-restarted")[0]["argv"] == fwupd.get_history_argv()


def test_a_device_that_runs_the_installed_release_is_verified():
    offer = fwupd.parse_updates(*recorded("get-updates-offer")[1])
    devices = fwupd.parse_devices(*recorded("get-devices-updated")[1])
    history = fwupd.parse_devices(*recorded("get-history")[1])
    found = fwupd.verify(offer, devices, history)
    assert [(r["name"], r["expected"], r["found"], r["ok"]) for r in found] == [
        ("Integrated Webcam\u2122", "1.2.4", "1.2.4", True)]
    assert found[0]["history"] == {"update_state": "success", "update_error": None, "release": "1.2.4"}


def test_a_device_back_at_its_old_firmware_after_a_restart_is_not_verified():
    # fwupd's test device is made anew at 1.2.2 at every start of fwupd: the shape of a device that did not take it
    offer = fwupd.parse_updates(*recorded("get-updates-offer")[1])
    devices = fwupd.parse_devices(*recorded("get-devices-restarted")[1])
    found = fwupd.verify(offer, devices, fwupd.parse_devices(*recorded("get-history-restarted")[1]))
    assert [(r["expected"], r["found"], r["ok"]) for r in found] == [("1.2.4", "1.2.2", False)]


def test_a_device_gone_after_the_reboot_is_not_verified():
    offer = fwupd.parse_updates(*recorded("get-updates-offer")[1])
    assert fwupd.verify(offer, {}, {})[0]["ok"] is False


def test_parse_devices_raises_fwupds_own_failure():
    with pytest.raises(fwupd.FwupdError, match="exited 101"):
        fwupd.parse_devices(*recorded("refresh-offline")[1])
